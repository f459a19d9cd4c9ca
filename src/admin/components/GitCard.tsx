/**
 * The dashboard's card of the site folder's git state (`GET /git-status`, view-git) and its Pull
 * button (`POST /git-pull`, pull-git): what was pulled, the definitions it added, changed or
 * removed, extension code that waits for a restart, or the refusal in git's own words. A pull that
 * changed definitions reloads the app's meta, so a new resource is in the Resources menu at once.
 */
import { useEffect, useId } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, query, type Envelope } from "../api";
import { loadMeta, may, resources } from "../state";
import { t, tn, when } from "../i18n";

type Commit = { commit: string; subject: string; author: string; time?: number };
type Change = { path: string; state: string; from?: string };
export type GitState = {
  available: boolean; reason?: string; branch?: string | null; upstream?: string | null; upstream_reason?: string;
  head?: Commit | null; ahead?: number | null; behind?: number | null; changed?: Change[]; changed_count?: number;
  fetched?: boolean; fetch_reason?: string; fetched_at?: number | null;
};
type Pulled = {
  pulled: { from: string; to: string; upstream: string; commits: Commit[]; changed: string[] };
  definitions: { added: string[]; changed: string[]; removed: string[] };
  restart_needed: boolean; restart_files?: string[];
};
type Refusal = { status: number; refusal?: string; details: string; hint?: string; files?: string[] };

/** Local changes shown by name; the rest are counted. */
const SHOWN_CHANGES = 10;

const STATES: Record<string, () => string> = {
  modified: () => t("changed"), added: () => t("added"), deleted: () => t("deleted"), renamed: () => t("renamed"), copied: () => t("copied"),
  "type-changed": () => t("type changed"), conflicted: () => t("in conflict"), untracked: () => t("not in git"),
};

/** What a refusal means, before git's own words. */
function headline(r: Refusal): string {
  switch (r.refusal) {
    case "local-changes": return t("Not pulled: files the pull would change have local changes on the server.");
    case "diverged": return t("Not pulled: the branch and its upstream have each gone their own way (resd only fast-forwards).");
    case "no-upstream": return t("Not pulled: the branch has no upstream to pull from.");
    case "busy": return t("Not pulled: another pull of this site is running.");
    case "not-a-checkout": return t("Not pulled: the site folder is not a git checkout.");
    case "fetch-failed": return t("Not pulled: the remote could not be reached.");
  }
  if (r.status === 422) return t("Not pulled: the new commits hold something the site cannot serve. Nothing changed.");
  return t("The pull failed.");
}

const short = (commit: string) => commit.slice(0, 7);

function StateLine({ git }: { git: GitState }) {
  const behind = git.behind ?? 0;
  const ahead = git.ahead ?? 0;
  if (!git.upstream) return <>{t("No upstream")}{git.upstream_reason ? `: ${git.upstream_reason}` : ""}</>;
  if (!behind && !ahead) return <>{t("Up to date with {upstream}", { upstream: git.upstream })}</>;
  const parts = [
    ...(behind ? [tn(behind, "behind {n} commit", "behind {n} commits")] : []),
    ...(ahead ? [tn(ahead, "ahead {n} commit", "ahead {n} commits")] : []),
  ];
  return <strong>{parts.join(", ")}</strong>;
}

function Result({ r }: { r: Pulled }) {
  const { commits } = r.pulled;
  const defs = r.definitions;
  const named = (names: string[]) => names.map((n, i) => (
    <span key={n}>{i > 0 && ", "}{resources.value[n] ? <a href={`/admin/${n}`}>{resources.value[n].label.plural}</a> : <code>{n}</code>}</span>
  ));
  return (
    <div class="git-result" data-git-result>
      <p class="ok">{commits.length
        ? tn(commits.length, "Pulled {n} commit from {upstream}:", "Pulled {n} commits from {upstream}:", { upstream: r.pulled.upstream })
        : t("Already up to date: there was nothing to pull.")}</p>
      {commits.length > 0 && (
        <ul class="git-commits">
          {commits.map((c) => <li key={c.commit}><code>{short(c.commit)}</code> {c.subject} <span class="muted">— {c.author}</span></li>)}
        </ul>
      )}
      {defs.added.length > 0 && <p data-defs="added">{t("Resources added:")} {named(defs.added)}</p>}
      {defs.changed.length > 0 && <p data-defs="changed">{t("Resources changed:")} {named(defs.changed)}</p>}
      {defs.removed.length > 0 && <p data-defs="removed">{t("Resources no longer served:")} {named(defs.removed)}</p>}
      {r.restart_needed && (
        <p class="warning" data-restart>
          {t("Extension code changed ({files}). It is loaded only when resd starts, so the old code runs until resd is restarted: restart resd to use it.", { files: (r.restart_files ?? []).join(", ") })}
        </p>
      )}
    </div>
  );
}

export function GitCard() {
  const heading = useId();
  const git = useSignal<GitState | null>(null);
  const checking = useSignal(false);
  const error = useSignal("");
  const pulling = useSignal(false);
  const result = useSignal<Pulled | null>(null);
  const refused = useSignal<Refusal | null>(null);
  const mayPull = may("pull-git");
  /** The last check did not ask the remote on purpose (after a pull): no need to say why it did not. */
  const quiet = useSignal(false);

  /** `fetch`: ask the remote first (at most 20 s on the server); else what is known now. */
  const check = async (fetch = true) => {
    checking.value = true;
    try {
      const r = await api<Envelope & { git: GitState }>("GET", `/git-status${query({ fetch: fetch ? undefined : 0 })}`);
      git.value = r.body.git;
      quiet.value = !fetch;
      error.value = "";
    } catch (e) {
      error.value = (e as Error).message;
    } finally {
      checking.value = false;
    }
  };
  useEffect(() => { void check(); }, []);

  const pull = async () => {
    pulling.value = true;
    result.value = null;
    refused.value = null;
    try {
      const r = await api<Envelope & Pulled>("POST", "/git-pull");
      const d = r.body.definitions;
      // The new resources are in the menus at once, their labels in the result.
      if (d.added.length || d.changed.length || d.removed.length) await loadMeta();
      result.value = r.body;
    } catch (e) {
      const b = e instanceof ApiError ? e.body : null;
      refused.value = {
        status: e instanceof ApiError ? e.status : 0, refusal: b?.refusal as string | undefined, details: b?.details || (e as Error).message,
        hint: b?.hint as string | undefined, files: Array.isArray(b?.files) ? (b.files as string[]) : undefined,
      };
    } finally {
      pulling.value = false;
    }
    await check(false);
  };

  const g = git.value;
  const changed = g?.changed ?? [];
  const changedCount = g?.changed_count ?? changed.length;
  return (
    <section class="git-card" aria-labelledby={heading} aria-busy={checking.value || pulling.value}>
      <div class="git-head">
        <h2 id={heading}>{t("Site files in git")}</h2>
        <button type="button" onClick={() => void check()} disabled={checking.value || pulling.value}>{t("Check again")}</button>
      </div>
      {checking.value && !g && <p class="muted">{t("Asking the remote for news…")}</p>}
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {g && !g.available && (
        <>
          <p>{t("The site folder is not a git checkout, or git is not installed on the server.")}</p>
          {g.reason && <pre class="git-words">{g.reason}</pre>}
        </>
      )}
      {g?.available && (
        <dl class="git-facts">
          <dt>{t("Branch")}</dt>
          <dd data-git="branch">{g.branch ?? t("none (a detached HEAD)")}{g.upstream && <span class="muted"> → {g.upstream}</span>}</dd>
          <dt>{t("State")}</dt>
          <dd data-git="state"><StateLine git={g} />
            {!g.fetched && !quiet.value && g.fetch_reason && <span class="muted"> ({t("not checked with the remote: {why}", { why: g.fetch_reason })})</span>}
          </dd>
          <dt>{t("Last commit")}</dt>
          <dd data-git="head">{g.head
            ? <>{g.head.subject} <span class="muted">— {g.head.author}{g.head.time ? `, ${when(g.head.time * 1000)}` : ""} (<code>{short(g.head.commit)}</code>)</span></>
            : t("none yet")}</dd>
          <dt>{t("Local changes")}</dt>
          <dd data-git="changed">
            {changedCount === 0 ? t("none") : tn(changedCount, "{n} file", "{n} files")}
            {changed.length > 0 && (
              <ul class="git-changes">
                {changed.slice(0, SHOWN_CHANGES).map((c) => <li key={c.path}><code>{c.path}</code> <span class="muted">{STATES[c.state]?.() ?? c.state}</span></li>)}
                {changedCount > SHOWN_CHANGES && <li class="muted">{t("and {n} more", { n: changedCount - SHOWN_CHANGES })}</li>}
              </ul>
            )}
          </dd>
          {g.fetched_at ? <><dt>{t("Remote checked")}</dt><dd>{when(g.fetched_at * 1000)}</dd></> : null}
        </dl>
      )}
      {mayPull && g?.available && (
        <p><button type="button" class="primary" onClick={() => void pull()} disabled={pulling.value}>{pulling.value ? t("Pulling…") : t("Pull")}</button></p>
      )}
      <div role="status">{result.value && <Result r={result.value} />}</div>
      {refused.value && (
        <div class="git-refusal" role="alert">
          <p><strong>{headline(refused.value)}</strong></p>
          <pre class="git-words">{refused.value.details}</pre>
          {refused.value.files && refused.value.files.length > 0 && <ul>{refused.value.files.map((f) => <li key={f}><code>{f}</code></li>)}</ul>}
          {refused.value.hint && <p class="muted">{refused.value.hint}</p>}
        </div>
      )}
    </section>
  );
}
