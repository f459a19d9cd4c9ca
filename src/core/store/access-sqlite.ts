/**
 * SQL for the access layer: server-side sessions and failed-login counters (tables of MIGRATIONS
 * entry "sessions and login failures"). The PostgreSQL store brings its own (access-postgres.ts).
 */
import type { Database, Statement } from "bun:sqlite";
import type { AccessStore, LoginState, SessionRow, Store } from "./types";

export class SqliteAccessStore implements AccessStore {
  private readonly versionStmt: Statement;
  private readonly sessionStmt: Statement;
  private readonly loginStmt: Statement;

  constructor(private readonly store: Pick<Store, "transaction"> & { readDb: Database; writeDb: Database }) {
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
