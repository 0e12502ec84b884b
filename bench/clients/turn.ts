/** What the load generator asks of every contender's client: sessions that take echo turns. */

export interface TurnResult {
  /** Progress events seen for the turn (the echo turn has exactly one). */
  readonly progress: number;
  readonly text: string;
}

export interface TurnSession {
  /** One turn: sends `text`, resolves once the final reply is read (and checked: it carries `text`, after one progress). */
  turn(text: string): Promise<TurnResult>;
  close(): Promise<void>;
}

/** Opens session number `index` against the contender at `base`. */
export type OpenSession = (base: string, index: number) => Promise<TurnSession>;

/** What a client that was away saw when it came back. */
export interface Resumed {
  /** From opening the stream again to having read all it will get. */
  readonly catchUpMs: number;
  /** Bytes read on the resumed stream. */
  readonly bytes: number;
  /** Replies read on it; those it was told it missed (named, as a resync frame names them); those that never came back and were never named. */
  readonly replayed: number;
  readonly missed: number;
  readonly lost: number;
}

/** A fresh session: a first turn read, the client away while `away` more are answered, then back from the newest id it read. */
export type AwayAndBack = (base: string, away: number) => Promise<Resumed>;
