// What the worker loads: one export per workflow module.
export * from './ping';
export * from './checkout-session';
export * from './webhook-delivery';
export * from './routines';
export * from './subscription';
export * from './charge';
export * from './usage-periods';
export * from './test-clock';
