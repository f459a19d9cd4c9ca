/**
 * A role's permissions as a grid: per resource view, create, edit, delete, import, export, manage
 * and "delete all" (`api_delete_resource_<r>`); the media library's own; git's (`view-git`,
 * `pull-git`); the pages' (`view-.pages`, `manage-.pages`); `(all)`. Permissions the grid does not
 * know are kept as they are. The server refuses what the editor may not grant.
 */
import { resources } from "../state";
import { Icon } from "./Icon";
import { t } from "../i18n";

const ACTIONS = ["view", "create", "edit", "delete", "import", "export", "manage"] as const;
const FILE_PERMISSIONS = ["view-.files", "create-.files", "edit-.files", "delete-.files", "manage-.files"];
/** The site's git state (`git-status`) and pulling into it (`git-pull`): docs/editing.md. */
const GIT_PERMISSIONS = ["view-git", "pull-git"];
/** The site's pages (`.pages`): view lists route files and endpoints, manage writes route files. */
const PAGES_PERMISSIONS = ["view-.pages", "manage-.pages"];

export function PermissionEditor({ id, value, onChange, readOnly }: { id: string; value: unknown; onChange: (v: string[]) => void; readOnly: boolean }) {
  const list = Array.isArray(value) ? value.map(String) : [];
  const has = (p: string) => list.includes(p);
  const flip = (p: string) => onChange(has(p) ? list.filter((x) => x !== p) : [...list, p]);
  const names = [...new Set([...Object.keys(resources.value), "users", "roles"])].sort();
  const known = new Set(["(all)", ...FILE_PERMISSIONS, ...GIT_PERMISSIONS, ...PAGES_PERMISSIONS, ...names.flatMap((r) => [...ACTIONS.map((a) => `${a}-${r}`), `api_delete_resource_${r}`])]);
  const others = list.filter((p) => !known.has(p));
  /** A grid cell's box is named for its column and row; a box beside its words, by its label. */
  const box = (p: string, label?: string) => <input type="checkbox" aria-label={label} data-permission={p} checked={has(p)} disabled={readOnly} onChange={() => flip(p)} />;
  const plural = (r: string) => resources.value[r]?.label.plural ?? r;
  return (
    <div id={id} class="permissions" role="group" aria-label={t("Permissions")}>
      <label class="all">{box("(all)")} <strong>(all)</strong> — {t("every permission (administrator)")}</label>
      <table>
        <thead><tr><th scope="col">{t("Resource")}</th>{ACTIONS.map((a) => <th key={a} scope="col">{a}</th>)}<th scope="col">delete all</th></tr></thead>
        <tbody>
          {names.map((r) => (
            <tr key={r}><th scope="row">{plural(r)}</th>
              {ACTIONS.map((a) => <td key={a}>{box(`${a}-${r}`, `${a} ${plural(r)}`)}</td>)}
              <td>{box(`api_delete_resource_${r}`, `delete all ${plural(r)}`)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <fieldset><legend>{t("Media library")}</legend>{FILE_PERMISSIONS.map((p) => <label key={p}>{box(p)} {p.split("-")[0]}</label>)}</fieldset>
      <fieldset><legend>{t("Deploying with git")}</legend>{GIT_PERMISSIONS.map((p) => <label key={p}>{box(p)} {p.split("-")[0]}</label>)}</fieldset>
      <fieldset><legend>{t("Pages")}</legend>{PAGES_PERMISSIONS.map((p) => <label key={p}>{box(p)} {p.split("-")[0]}</label>)}</fieldset>
      {others.length > 0 && <p>{t("Also held:")} {others.map((p) => <span key={p} class="chip">{p} {!readOnly && <button type="button" class="link" aria-label={t("Remove {name}", { name: p })} onClick={() => flip(p)}><Icon name="close" /></button>}</span>)}</p>}
    </div>
  );
}
