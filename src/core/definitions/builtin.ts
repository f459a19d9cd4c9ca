/** Resources every site has without a file. A site file of the same name extends them. */
import type { DefinitionFile } from "./types";

/**
 * Keys resd writes itself, never shown and never written through the API (account-guard.ts keeps
 * them): `token_epoch`, `session_epoch` and `api_epoch` (which tokens, sessions and API keys carry),
 * and `totp`, the two-factor state (core/access/totp.ts).
 */
export const USER_ALWAYS_HIDDEN = ["password", "salt", "api", "password_reset_token", "change_email_token", "token_epoch", "session_epoch", "api_epoch", "totp"];

export const BUILTIN: Record<string, DefinitionFile & { internal?: boolean }> = {
  users: {
    name: { singular: "User", plural: "Users" },
    appbar: false,
    history: false,
    self_edit: "name",
    unique: ["email"],
    fields: {
      email: { type: "email", name: "E-mail", required: true },
      name: { type: "text", name: "Name" },
      password: { type: "password", name: "Password" },
      role: { type: "select", name: "Role", resource: "roles", reference: "uuid" },
      api: { type: "boolean", name: "API access" },
    },
  },
  roles: {
    name: { singular: "Role", plural: "Roles" },
    appbar: false,
    unique: ["name"],
    fields: {
      name: { type: "text", name: "Name", required: true },
      permissions: { type: "text", name: "Permissions", multi: true },
      // Members without two-factor sign-in may only enrol (core/access/totp.ts, http/auth.ts).
      require_2fa: { type: "boolean", name: "Require two-factor sign-in" },
    },
  },
  ".files_meta": {
    internal: true,
    history: false,
    fields: {
      name: { type: "text", name: "File name" },
      title: { type: "text", name: "Title" },
      // Newer than the first sites: records are JSON, so theirs simply lack it until it is set.
      alt: { type: "text", name: "Alt text" },
      type: { type: "text", name: "MIME type" },
      size: { type: "number", name: "Size" },
      width: { type: "number", name: "Width" },
      height: { type: "number", name: "Height" },
      orientation: { type: "text", name: "Orientation" },
    },
  },
  // The agents' conversations (core/agents/conversations.ts): written by that module alone, read
  // through agent-chat by their owner; never served by the record API.
  ".agent_conversations": {
    internal: true,
    history: false,
    index: ["owner"],
    fields: {
      owner: { type: "text", name: "Owner" },
      title: { type: "text", name: "Title" },
    },
  },
  // Personal API keys (core/access/api-keys.ts): written by that module alone, shown to their owner
  // through /api/v1/session/api-keys; only a hash of each secret is kept.
  ".api_keys": {
    internal: true,
    history: false,
    index: ["owner"],
    fields: {
      owner: { type: "text", name: "Owner" },
      name: { type: "text", name: "Name" },
    },
  },
};

/** Merges a site file into a built-in definition: the file's fields and keys win, built-in fields stay. */
export function extendBuiltin(base: DefinitionFile, file: DefinitionFile): DefinitionFile {
  return {
    ...base,
    ...file,
    fields: { ...base.fields, ...file.fields },
    unique: [...new Set([...(base.unique ?? []), ...(file.unique ?? [])])],
  };
}
