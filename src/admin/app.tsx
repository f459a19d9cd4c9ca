/** The admin pages: top bar and one page per path under /admin. */
import { useEffect } from "preact/hooks";
import { location, navigate } from "./router";
import { loadMeta, me, mustEnrol2fa, resources, status } from "./state";
import { signInPath } from "./api";
import { profilePath, PUBLIC_PATHS } from "./account";
import { TopBar } from "./components/TopBar";
import { SignIn } from "./pages/SignIn";
import { ResetPassword } from "./pages/ResetPassword";
import { ConfirmEmail } from "./pages/ConfirmEmail";
import { Start } from "./pages/Start";
import { Overview } from "./pages/Overview";
import { RecordPage } from "./pages/RecordPage";
import { FilesPage } from "./pages/FilesPage";
import { PagesPage } from "./pages/PagesPage";
import { Profile } from "./pages/Profile";
import { t } from "./i18n";

function Page() {
  // A member who must set up two-factor sign-in first gets nothing else (the server refuses the rest).
  if (mustEnrol2fa.value) return <Profile />;
  const segs = location.value.path.replace(/^\/admin\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (segs.length === 0) return <Start />;
  if (segs[0] === "files" && segs.length === 1 && !resources.value.files) return <FilesPage />;
  if (segs[0] === "profile" && segs.length === 1 && !resources.value.profile) return <Profile />;
  // "-" is no resource name (they start with a letter or digit): the admin's own screens.
  if (segs[0] === "-" && segs[1] === "pages" && segs.length <= 3) return <PagesPage sub={segs[2]} />;
  if (segs[0] === "-" && segs[1] === "profile" && segs.length === 2) return <Profile />;
  const def = resources.value[segs[0]];
  if (!def) return <main class="page"><h1>{t("Not found")}</h1><p>{t("There is no resource “{name}” you may see.", { name: segs[0] })}</p><p><a href="/admin">{t("Back to the start page")}</a></p></main>;
  if (segs.length === 1) return <Overview key={def.name} def={def} />;
  const view = location.value.params.get("view") === "1";
  return <RecordPage key={`${def.name}/${segs[1]}/${view}`} def={def} uuid={segs[1] === "new" ? null : segs[1]} readOnly={view} />;
}

/** Pages that work without a session: signing in, and the links in account mails. */
function PublicPage({ path }: { path: string }) {
  if (path === "/admin/reset-password") return <ResetPassword />;
  if (path === "/admin/confirm-email") return <ConfirmEmail />;
  return <SignIn />;
}

const PUBLIC = new Set(PUBLIC_PATHS);

export function App() {
  const path = location.value.path.replace(/\/$/, "");
  const isPublic = PUBLIC.has(path);
  // The public pages do not ask who is signed in: they are opened from mails, in any browser.
  useEffect(() => {
    if (!isPublic && status.value === "loading") void loadMeta();
  }, [isPublic]);
  useEffect(() => {
    if (status.value === "out" && !isPublic) navigate(signInPath(), true);
  }, [status.value, isPublic]);
  useEffect(() => {
    if (mustEnrol2fa.value && !isPublic && path !== profilePath()) navigate(profilePath(), true);
  }, [mustEnrol2fa.value, isPublic, path]);
  if (isPublic) return <PublicPage path={path} />;
  if (status.value !== "in" || !me.value) return <p class="loading" role="status">{t("Loading…")}</p>;
  return (
    <>
      <a class="skip" href="#main">{t("Skip to content")}</a>
      <TopBar />
      <div id="main"><Page /></div>
    </>
  );
}
