/** `GET /api/v1/empty-resource?resource=…`: the values a new record's form starts from. */
import { authorize, type Principal } from "../access/permissions";
import type { FieldDef, ResourceDef } from "../definitions/types";
import type { Site } from "../site";

function emptyValue(f: FieldDef, languages: string[]): unknown {
  if ("default" in f) return f.default;
  if (f.i18n && languages.length) return Object.fromEntries(languages.map((l) => [l, emptyValue({ ...f, i18n: false }, [])]));
  if (f.multi || f.type === "gallery" || f.type === "group") return [];
  switch (f.type) {
    case "boolean": return false;
    case "number": case "location-picker": return null;
    default: return "";
  }
}

export function emptyRecord(site: Site, p: Principal, resource: string): { def: ResourceDef; values: Record<string, unknown> } {
  const def = site.resource(resource);
  authorize(p, resource, "create");
  const languages = def.raw.languages ?? [];
  const values: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(def.fields)) {
    if (def.encrypted.has(name) || f.type === "password") continue;
    values[name] = emptyValue(f, languages);
  }
  return { def, values };
}
