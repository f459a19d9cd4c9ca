/** The admin pages: top bar and one page per path under /admin. */
import { useEffect } from "preact/hooks";
import { location, navigate } from "./router";
import { loadMeta, me, resources, status } from "./state";
import { signInPath } from "./api";
import { TopBar } from "./components/TopBar";
import { SignIn } from "./pages/SignIn";
import { Start } from "./pages/Start";
import { Overview } from "./pages/Overview";
import { RecordPage } from "./pages/RecordPage";
import { FilesPage } from "./pages/FilesPage";
import { PagesPage } from "./pages/PagesPage";
import { t } from "./i18n";

function Page() {
  const segs = location.value.path.replace(/^\/admin\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (segs.length === 0) return <Start />;
  if (segs[0] === "files" && segs.length === 1 && !resources.value.files) return <FilesPage />;
  // "-" is no resource name (they start with a letter or digit): the admin's own screens.
  if (segs[0] === "-" && segs[1] === "pages" && segs.length <= 3) return <PagesPage sub={segs[2]} />;
  const def = resources.value[segs[0]];
  if (!def) return <main class="page"><h1>{t("Not found")}</h1><p>{t("There is no resource “{name}” you may see.", { name: segs[0] })}</p><p><a href="/admin">{t("Back to the start page")}</a></p></main>;
  if (segs.length === 1) return <Overview key={def.name} def={def} />;
  const view = location.value.params.get("view") === "1";
  return <RecordPage key={`${def.name}/${segs[1]}/${view}`} def={def} uuid={segs[1] === "new" ? null : segs[1]} readOnly={view} />;
}

export function App() {
  useEffect(() => { void loadMeta(); }, []);
  const onSignIn = location.value.path === "/admin/sign-in";
  useEffect(() => {
    if (status.value === "out" && !onSignIn) navigate(signInPath(), true);
  }, [status.value, onSignIn]);
  if (onSignIn) return <SignIn />;
  if (status.value !== "in" || !me.value) return <p class="loading" role="status">{t("Loading…")}</p>;
  return (
    <>
      <a class="skip" href="#main">{t("Skip to content")}</a>
      <TopBar />
      <div id="main"><Page /></div>
    </>
  );
}
