// What the worker loads: one export per workflow module.
export * from './ping';
export * from './checkout-session/workflow';
export * from './webhook-delivery/workflow';
export * from './routines/workflow';
export * from './subscription/workflow';
export * from './charge/workflow';
export * from './usage-periods/workflow';
export * from './test-clock/workflow';
export * from './refund/workflow';
export * from './give-back/workflow';
