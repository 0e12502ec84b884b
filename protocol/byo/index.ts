/** BYO end-to-end encryption (2.2, 5): envelopes, key agreement and authenticated pairing. Browser-safe. */
export * from './encoding.js';
export * from './keys.js';
export * from './envelope.js';
export * from './pairing.js';
export * from './rekey.js';
