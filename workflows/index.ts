// What the worker loads: one export per workflow module.
export * from './ping';
