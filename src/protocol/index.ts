export * from './limits.js';
export * from './ids.js';
export * from './wire.js';
export * from './errors.js';
export * from './sse.js';
export * from './reasoning.js';
export * from './providers.js';
export * from './tokens.js';
