/**
 * SQL for the access layer: server-side sessions and failed-login counters (tables of MIGRATIONS
 * entry "sessions and login failures"). Kept in the store folder so that all SQL stays here; a
 * PostgreSQL store would bring its own `AccessStore`.
 */
import type { Statement } from "bun:sqlite";
import type { Store } from "./types";
import { SqliteStore } from "./sqlite";

export type SessionRow = {
  /** SHA-256 of the cookie value: a stolen database does not yield usable cookies. */
  id: string;
  user: string;
  /** Fingerprint of the user's password hash when the session began. */
  pfp: string;
  created: number;
  seen: number;
  expires: number;
};

export type LoginState = { account: string; failures: number; last_ms: number; locked_until: number };

export interface AccessStore {
  /** Changes whenever anything commits to the database (this process or another). */
  version(): number;
  getSession(id: string): Promise<SessionRow | null>;
  putSession(s: SessionRow): Promise<void>;
  touchSession(id: string, seen: number, expires: number): Promise<void>;
  deleteSession(id: string): Promise<void>;
  purgeSessions(now: number): Promise<number>;
  loginState(account: string): Promise<LoginState | null>;
  /** Reads and replaces one account's counter in one transaction; `null` from `fn` deletes it. */
  updateLoginState(account: string, fn: (cur: LoginState | null) => LoginState | null): Promise<LoginState | null>;
  purgeLoginStates(before: number): Promise<number>;
}

class SqliteAccessStore implements AccessStore {
  private readonly versionStmt: Statement;
  private readonly sessionStmt: Statement;
  private readonly loginStmt: Statement;

  constructor(private readonly store: SqliteStore) {
    this.versionStmt = store.readDb.query("PRAGMA data_version");
    this.sessionStmt = store.readDb.query("SELECT * FROM _resd_sessions WHERE id = ?");
    this.loginStmt = store.readDb.query("SELECT * FROM _resd_login_failures WHERE account = ?");
  }

  version(): number {
    return (this.versionStmt.get() as { data_version: number }).data_version;
  }

  async getSession(id: string) {
    return this.sessionStmt.get(id) as SessionRow | null;
  }

  putSession(s: SessionRow) {
    return this.store.transaction(async () => {
      this.store.writeDb.query("INSERT INTO _resd_sessions (id, user, pfp, created, seen, expires) VALUES (?, ?, ?, ?, ?, ?)")
        .run(s.id, s.user, s.pfp, s.created, s.seen, s.expires);
    });
  }

  touchSession(id: string, seen: number, expires: number) {
    return this.store.transaction(async () => {
      this.store.writeDb.query("UPDATE _resd_sessions SET seen = ?, expires = ? WHERE id = ?").run(seen, expires, id);
    });
  }

  deleteSession(id: string) {
    return this.store.transaction(async () => {
      this.store.writeDb.query("DELETE FROM _resd_sessions WHERE id = ?").run(id);
    });
  }

  purgeSessions(now: number) {
    return this.store.transaction(async () => this.store.writeDb.query("DELETE FROM _resd_sessions WHERE expires <= ?").run(now).changes);
  }

  async loginState(account: string) {
    return this.loginStmt.get(account) as LoginState | null;
  }

  updateLoginState(account: string, fn: (cur: LoginState | null) => LoginState | null) {
    return this.store.transaction(async () => {
      const w = this.store.writeDb;
      const cur = w.query("SELECT * FROM _resd_login_failures WHERE account = ?").get(account) as LoginState | null;
      const next = fn(cur);
      if (!next) w.query("DELETE FROM _resd_login_failures WHERE account = ?").run(account);
      else {
        w.query(`INSERT INTO _resd_login_failures (account, failures, last_ms, locked_until) VALUES (?, ?, ?, ?)
          ON CONFLICT(account) DO UPDATE SET failures = excluded.failures, last_ms = excluded.last_ms, locked_until = excluded.locked_until`)
          .run(account, next.failures, next.last_ms, next.locked_until);
      }
      return next;
    });
  }

  purgeLoginStates(before: number) {
    return this.store.transaction(async () =>
      this.store.writeDb.query("DELETE FROM _resd_login_failures WHERE last_ms < ? AND locked_until < ?").run(before, before).changes);
  }
}

const adapters = new WeakMap<Store, AccessStore>();

/** The access tables of a site's store. */
export function accessStore(store: Store): AccessStore {
  let a = adapters.get(store);
  if (!a) {
    if (!(store instanceof SqliteStore)) throw new Error("sessions and login counters need the SQLite store");
    a = new SqliteAccessStore(store);
    adapters.set(store, a);
  }
  return a;
}
