/**
 * A job's `response_schema` as an Ajv validator (JSON Schema draft 2020-12, with the standard formats).
 * Each distinct schema gets its own Ajv instance, so that two schemas claiming the same `$id` never
 * collide; the newest few are cached, since the jobs of one purpose share one schema.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: under NodeNext its default export arrives as the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

export type ResultCheck = (result: unknown) => { ok: true } | { ok: false; message: string };

const CACHED_SCHEMAS = 32;

export class ResultChecks {
  private readonly cache = new Map<string, ResultCheck>();

  /** The check for `schema`; throws (with Ajv's reason) when it is not a valid JSON Schema. */
  compile(schema: Record<string, unknown>): ResultCheck {
    const key = JSON.stringify(schema);
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    // strict off: a schema from elsewhere may carry annotations Ajv does not know, which mean nothing to validation.
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const validate: ValidateFunction = ajv.compile(schema);
    const check: ResultCheck = (result) =>
      validate(result) ? { ok: true } : { ok: false, message: ajv.errorsText(validate.errors, { dataVar: 'result' }) };
    if (this.cache.size >= CACHED_SCHEMAS) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, check);
    return check;
  }
}
