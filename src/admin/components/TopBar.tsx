/**
 * Resources menu (appbar resources the user may view), the admin menu, the chat with agents (for
 * users who may chat), and the signed-in user, whose name leads to their profile. A member who must
 * set up two-factor sign-in first gets no menus (nothing behind them would answer).
 */
import { api } from "../api";
import { navigate } from "../router";
import { may, me, mustEnrol2fa, resources, status } from "../state";
import { profilePath } from "../account";
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
      {mustEnrol2fa.value ? <span class="spacer" /> : <nav aria-label={t("Main")}>
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
      </nav>}
      {!mustEnrol2fa.value && <ChatButton />}
      <a class="who" href={profilePath()} title={t("Your profile")}>{me.value?.email}</a>
      <button type="button" class="link" onClick={signOut}>{t("Sign out")}</button>
    </header>
  );
}
