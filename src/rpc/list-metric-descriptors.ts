import type { StatsViews } from '../container/stats-views';
import { metricDescriptors } from '../cri/metrics-cadvisor';

export function listMetricDescriptors(_source: StatsViews) {
  return async () => {
    return { descriptors: metricDescriptors() };
  };
}
