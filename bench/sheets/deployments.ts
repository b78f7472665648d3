// The workload the Sheeternetes benchmarks apply (bench/sheets, bench/sheets-scale): PODS replicas
// spread over ten deployments of small pods, so placement, not capacity, is what is measured.
export function spreadDeployments(pods: number) {
  return Array.from({ length: 10 }, (_, i) => ({
    name: `app${i}`,
    image: 'x',
    replicas: pods / 10,
    cpu_req: 100,
    mem_req: 64,
  }));
}
