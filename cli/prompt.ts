/** Asking the person at the terminal for a secret, without echoing it. */
import { badRequest } from "../src/core/errors";

/**
 * Reads one line from a terminal in raw mode, so the typed characters are never shown (nor left in
 * the scrollback). Backspace edits, Ctrl-C ends the command (exit 130, as a shell does), Ctrl-D on
 * an empty line gives up.
 */
export function readHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(question);
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed = "";
    const end = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n") return (end(), resolve(typed));
        if (ch === "\u0003") return (end(), process.exit(130));
        if (ch === "\u0004" && typed === "") return (end(), reject(badRequest("no password given")));
        if (ch === "\u007f" || ch === "\b") typed = [...typed].slice(0, -1).join("");
        else if (ch >= " ") typed += ch;
      }
    };
    stdin.on("data", onData);
  });
}

/** A new password typed twice, so that a typo does not lock the account. */
export async function readNewPassword(): Promise<string> {
  const first = await readHidden("New password: ");
  const again = await readHidden("Repeat it: ");
  if (first !== again) throw badRequest("the two passwords differ; nothing changed");
  return first;
}
