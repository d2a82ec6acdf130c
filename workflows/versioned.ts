// What a versioned worker loads (worker/versioning.ts): every workflow, each with its Worker Versioning
// behaviour (the reason is written beside each workflow). Temporal's Core refuses a workflow that names
// a behaviour on a worker without versioning, so unversioned workers (tests, WORKER_VERSIONING=off) load
// workflows/index.ts instead.
import { setWorkflowOptions } from '@temporalio/workflow';
import {
  chargeWorkflow,
  checkoutSessionWorkflow,
  eventSweeperWorkflow,
  refundWorkflow,
  giveBackWorkflow,
  subscriptionWorkflow,
  testClockWorkflow,
  usagePeriodsWorkflow,
  usageRoutineLoopWorkflow,
  webhookDeliveryWorkflow,
} from './index';

export * from './index';

// Short-lived: a run ends on the build that started it.
setWorkflowOptions({ versioningBehavior: 'PINNED' }, checkoutSessionWorkflow);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, webhookDeliveryWorkflow);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, chargeWorkflow);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, refundWorkflow);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, giveBackWorkflow);
// Long-lived: moves to the current build; its changes keep patched().
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, subscriptionWorkflow);
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, usagePeriodsWorkflow);
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, testClockWorkflow);
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, eventSweeperWorkflow);
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, usageRoutineLoopWorkflow);
