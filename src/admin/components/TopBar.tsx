/**
 * Resources menu (appbar resources the user may view), the admin menu, the chat with agents (for
 * users who may chat), and the signed-in user.
 */
import { api } from "../api";
import { navigate } from "../router";
import { may, me, resources, status } from "../state";
import { mayViewPages, PAGES_PATH } from "./site-pages";
import { ChatButton } from "./ChatButton";
import { t } from "../i18n";

function closeMenus(e: Event) {
  (e.currentTarget as HTMLElement).closest("details")?.removeAttribute("open");
}

export function TopBar() {
  const all = Object.values(resources.value);
  const bar = all.filter((r) => r.appbar && r.name !== "users" && r.name !== "roles");
  const admin = [resources.value.users, resources.value.roles].filter(Boolean);
  const files = may("view-.files") || may("manage-.files");
  const pages = mayViewPages();
  const signOut = async () => {
    await api("DELETE", "/session").catch(() => undefined);
    status.value = "out";
    navigate("/admin/sign-in", true);
  };
  return (
    <header class="topbar">
      <a class="brand" href="/admin">resd</a>
      <nav aria-label={t("Main")}>
        <details class="menu" data-menu="resources">
          <summary>{t("Resources")}</summary>
          <ul>
            {bar.map((r) => <li key={r.name}><a href={`/admin/${r.name}`} onClick={closeMenus}>{r.label.plural}</a></li>)}
            {bar.length === 0 && <li class="muted">{t("No resources")}</li>}
          </ul>
        </details>
        {(admin.length > 0 || files || pages) && (
          <details class="menu" data-menu="admin">
            <summary>{t("Administration")}</summary>
            <ul>
              {admin.map((r) => <li key={r!.name}><a href={`/admin/${r!.name}`} onClick={closeMenus}>{r!.label.plural}</a></li>)}
              {files && <li><a href="/admin/files" onClick={closeMenus}>{t("Media library")}</a></li>}
              {pages && <li><a href={PAGES_PATH} onClick={closeMenus}>{t("Site pages")}</a></li>}
            </ul>
          </details>
        )}
      </nav>
      <ChatButton />
      <span class="who">{me.value?.email}</span>
      <button type="button" class="link" onClick={signOut}>{t("Sign out")}</button>
    </header>
  );
}
