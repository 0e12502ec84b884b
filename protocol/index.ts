/** The protocol layer's public face: every wire schema, id, limit, error code and the BYO functions. */
export * from './limits.js';
export * from './ids.js';
export * from './wire.js';
export * from './errors.js';
export * from './sse.js';
export * from './reasoning.js';
export * from './purpose-schemas.js';
export * from './providers.js';
export * from './tokens.js';
export * from './byo/index.js';
export * from './pairing-wire.js';
export * from './retry-after.js';
