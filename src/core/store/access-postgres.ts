/** Sessions and failed-login counters on PostgreSQL: shared by every instance on the database. */
import type { AccessStore, LoginState, SessionRow } from "./types";
import type { PgHost } from "./postgres-host";

const SESSION = `id, "user", pfp, created::float8 AS created, seen::float8 AS seen, expires::float8 AS expires`;
const LOGIN = "account, failures, last_ms::float8 AS last_ms, locked_until::float8 AS locked_until";

/** PostgreSQL text cannot hold U+0000; a login attempt may send one (it matches no account). */
const key = (account: string) => account.replace(/\u0000/g, "\\u0000");

export class PgAccessStore implements AccessStore {
  constructor(private readonly store: PgHost) {}

  version(): number {
    return this.store.version();
  }

  async getSession(id: string): Promise<SessionRow | null> {
    return (await this.store.query<SessionRow>(`SELECT ${SESSION} FROM _resd_sessions WHERE id = ?`, [id]))[0] ?? null;
  }

  async putSession(s: SessionRow): Promise<void> {
    await this.store.raw((db) => db.unsafe(`INSERT INTO _resd_sessions (id, "user", pfp, created, seen, expires) VALUES ($1, $2, $3, $4, $5, $6)`,
      [s.id, s.user, s.pfp, s.created, s.seen, s.expires]));
  }

  async touchSession(id: string, seen: number, expires: number): Promise<void> {
    // Other instances hold the session with its old expiry: they must read it again.
    await this.store.raw((db) => db.unsafe("UPDATE _resd_sessions SET seen = $1, expires = $2 WHERE id = $3", [seen, expires, id]), { announce: true });
  }

  async deleteSession(id: string): Promise<void> {
    await this.store.raw((db) => db.unsafe("DELETE FROM _resd_sessions WHERE id = $1", [id]), { announce: true });
  }

  purgeSessions(now: number): Promise<number> {
    return this.store.raw(async (db) => (await db.unsafe("DELETE FROM _resd_sessions WHERE expires <= $1", [now])).count, { announce: true });
  }

  async loginState(account: string): Promise<LoginState | null> {
    return (await this.store.query<LoginState>(`SELECT ${LOGIN} FROM _resd_login_failures WHERE account = ?`, [key(account)]))[0] ?? null;
  }

  updateLoginState(given: string, fn: (cur: LoginState | null) => LoginState | null): Promise<LoginState | null> {
    const account = key(given);
    return this.store.raw(async (db) => {
      // One account's failures are counted one attempt at a time, whichever instance sees them.
      await db.unsafe("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`login:${account}`]);
      const cur = ((await db.unsafe(`SELECT ${LOGIN} FROM _resd_login_failures WHERE account = $1`, [account]))[0] as LoginState | undefined) ?? null;
      const next = fn(cur && { ...cur, account: given });
      if (!next) await db.unsafe("DELETE FROM _resd_login_failures WHERE account = $1", [account]);
      else {
        await db.unsafe(`INSERT INTO _resd_login_failures (account, failures, last_ms, locked_until) VALUES ($1, $2, $3, $4)
          ON CONFLICT (account) DO UPDATE SET failures = excluded.failures, last_ms = excluded.last_ms, locked_until = excluded.locked_until`,
        [account, next.failures, next.last_ms, next.locked_until]);
      }
      return next;
    });
  }

  purgeLoginStates(before: number): Promise<number> {
    return this.store.raw(async (db) => (await db.unsafe("DELETE FROM _resd_login_failures WHERE last_ms < $1 AND locked_until < $2", [before, before])).count);
  }
}
