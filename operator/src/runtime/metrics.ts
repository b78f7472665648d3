// Operator metrics in a Registry of their own (never prom-client's global one), named like
// controller-runtime's so existing dashboards and alerts apply.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface OperatorMetrics {
  registry: Registry;
  reconcileTotal: Counter<'controller' | 'result'>;
  reconcileErrors: Counter<'controller'>;
  reconcileTime: Histogram<'controller'>;
  queueDepth: Gauge<'name'>;
  queueAdds: Counter<'name'>;
  queueRetries: Counter<'name'>;
  restRequests: Counter<'method' | 'code'>;
  informerOperations: Counter<'resource' | 'operation'>;
  leader: Gauge<'name'>;
}

export function createOperatorMetrics(registry: Registry = new Registry()): OperatorMetrics {
  const registers = [registry];
  return {
    registry,
    reconcileTotal: new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller and result (success, error, requeue_after, conflict)',
      labelNames: ['controller', 'result'],
      registers,
    }),
    reconcileErrors: new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    }),
    reconcileTime: new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'workqueue_depth',
      help: 'Current number of keys waiting in the work queue',
      labelNames: ['name'],
      registers,
    }),
    queueAdds: new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by the work queue',
      labelNames: ['name'],
      registers,
    }),
    queueRetries: new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of rate-limited retries handled by the work queue',
      labelNames: ['name'],
      registers,
    }),
    restRequests: new Counter({
      name: 'rest_client_requests_total',
      help: 'Number of API server requests by HTTP method and status code (0 = no answer)',
      labelNames: ['method', 'code'],
      registers,
    }),
    informerOperations: new Counter({
      name: 'informer_operations_total',
      help: 'LISTs, WATCHes and failed LIST/WATCH attempts of the informers, per resource (relists show up here)',
      labelNames: ['resource', 'operation'],
      registers,
    }),
    leader: new Gauge({
      name: 'leader_election_master_status',
      help: '1 while this instance holds the leader lease, else 0',
      labelNames: ['name'],
      registers,
    }),
  };
}
