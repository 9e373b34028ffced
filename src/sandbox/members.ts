import type { ServiceDeps } from '../service-deps';
import { summaryOf, type ListedContainer } from '../state/summary';
import { SANDBOX_ID_LABEL } from '../labels';

/** Docker containers (not the pause one) that belong to a sandbox. */
export async function sandboxMembers(deps: ServiceDeps, sandboxId: string): Promise<ListedContainer[]> {
  if (deps.state)
    return (await deps.state.list()).filter((c) => c.Config.Labels?.[SANDBOX_ID_LABEL] === sandboxId).map(summaryOf);
  return deps.docker.listContainers({ label: [`${SANDBOX_ID_LABEL}=${sandboxId}`] });
}
