import { SANDBOX_OOM_SCORE_ADJ } from '../../daemon';
import type { Check } from '../types';

export const oomScoreCheck: Check = {
  name: 'oom-score-adj',
  async run({ probes }) {
    const floor = await probes.oomScoreFloor();
    if (floor <= SANDBOX_OOM_SCORE_ADJ)
      return {
        name: this.name,
        status: 'ok',
        found: `oom_score_adj down to ${floor} is allowed (pause containers get ${SANDBOX_OOM_SCORE_ADJ})`,
      };
    return {
      name: this.name,
      status: 'warn',
      found: `this host refuses oom_score_adj below ${floor}: pause containers get ${floor}, lower container values are raised to it`,
      action:
        "run crishim and dockerd with CAP_SYS_RESOURCE (not in a user namespace) so pods keep the kubelet's OOM order",
    };
  },
};
