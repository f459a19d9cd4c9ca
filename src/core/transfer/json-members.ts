/**
 * Splits a JSON document into the members of its outer list or object — and, when asked, of one
 * object nested under a key of the outer object — without holding the document: text goes in
 * chunk by chunk, and each member comes out as its key and the text of its value, for JSON.parse.
 * An import of a 64 MB export then needs memory for one record at a time, not for the whole file
 * parsed into objects (which took 550-800 MB).
 *
 * Only the structure is checked here (strings, brackets, commas, colons); each value is checked
 * by whoever parses it.
 */
import { badRequest } from "../errors";

export type JsonMember = {
  /** The member's key; null for an item of a list. */
  key: string | null;
  /** 1: a member of the outer container; 2: of the object descended into. */
  depth: 1 | 2;
  /** The value's JSON text. */
  text: string;
};

type State = "begin" | "first" | "key" | "colon" | "value" | "in-value" | "after" | "end";

const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;

export class JsonMembers {
  private buf = "";
  private i = 0;
  private state: State = "begin";
  /** The containers being split, outermost first. */
  private readonly open: ("[" | "{")[] = [];
  private key: string | null = null;
  private start = 0;
  /** Inside the value being read: bracket depth, and whether in a string. */
  private nest = 0;
  private inString = false;
  /** Characters dropped from the front of buf (for error positions). */
  private dropped = 0;
  /** The outer container: a list or an object (known after the first character). */
  outer: "list" | "object" | null = null;

  /**
   * `descend(key)` is asked when a value of the outer object starts with `{`: true splits that
   * object's members (depth 2) instead of giving it as one value.
   */
  constructor(private readonly onMember: (m: JsonMember) => void, private readonly descend: (key: string) => boolean = () => false) {}

  /** Feeds the next piece of text. */
  push(text: string): void {
    this.buf = this.buf.slice(this.cut()) + text;
    this.scan();
  }

  /** The text has ended: anything left open is an error. */
  end(): void {
    this.scan();
    const rest = this.buf.slice(this.i).trim();
    if (this.state !== "end" || rest !== "") {
      throw badRequest(this.state === "begin" ? "the file is empty" : `the file is not valid JSON: it ends too early, or text follows its end (near character ${this.dropped + this.i})`);
    }
  }

  /** How much of buf is no longer needed: everything before the value being read. */
  private cut(): number {
    const keep = this.state === "in-value" ? this.start : this.i;
    this.i -= keep;
    this.start -= keep;
    this.dropped += keep;
    return keep;
  }

  private fail(what: string): never {
    throw badRequest(`the file is not valid JSON: ${what} at character ${this.dropped + this.i}`);
  }

  private scan(): void {
    const b = this.buf;
    while (this.i < b.length) {
      if (this.state === "in-value") {
        if (!this.readValue()) return;
        continue;
      }
      const c = b.charCodeAt(this.i);
      if (isSpace(c) || (c === 0xfeff && this.state === "begin")) {
        this.i++;
        continue;
      }
      switch (this.state) {
        case "begin":
          if (c !== 91 && c !== 123) throw badRequest("a JSON import is a list of records or an object of records keyed by uuid");
          this.outer = c === 91 ? "list" : "object";
          this.open.push(c === 91 ? "[" : "{");
          this.i++;
          this.state = "first";
          break;
        case "first":
        case "key":
          if (this.state === "first" && (c === 93 || c === 125)) {
            this.close(c);
            break;
          }
          if (this.top() === "[") {
            this.key = null;
            this.state = "value";
            break;
          }
          if (c !== 34) this.fail("a key expected");
          {
            const endQuote = this.stringEnd(this.i + 1);
            if (endQuote < 0) return; // the key continues in the next piece
            this.key = JSON.parse(b.slice(this.i, endQuote + 1)) as string;
            this.i = endQuote + 1;
            this.state = "colon";
          }
          break;
        case "colon":
          if (c !== 58) this.fail("':' expected");
          this.i++;
          this.state = "value";
          break;
        case "value":
          if (c === 123 && this.open.length === 1 && this.top() === "{" && this.key !== null && this.descend(this.key)) {
            this.open.push("{");
            this.i++;
            this.state = "first";
            break;
          }
          this.start = this.i;
          this.nest = 0;
          this.inString = false;
          this.state = "in-value";
          break;
        case "after":
          if (c === 44) {
            this.i++;
            this.state = "key";
          } else if (c === 93 || c === 125) {
            this.close(c);
          } else {
            this.fail("',' or the end of the list expected");
          }
          break;
        case "end":
          return;
      }
    }
  }

  private top() {
    return this.open[this.open.length - 1];
  }

  private close(c: number): void {
    if ((c === 93) !== (this.top() === "[")) this.fail("mismatched bracket");
    this.open.pop();
    this.i++;
    this.state = this.open.length ? "after" : "end";
  }

  /** Index of the quote that ends the string whose text starts at `from`, or -1 if not in buf yet. */
  private stringEnd(from: number): number {
    const b = this.buf;
    let q = b.indexOf('"', from);
    while (q >= 0) {
      let slashes = 0;
      for (let k = q - 1; k >= from && b.charCodeAt(k) === 92; k--) slashes++;
      if (slashes % 2 === 0) return q;
      q = b.indexOf('"', q + 1);
    }
    return -1;
  }

  /** Reads on in the current value; true when it ended (and was given out). */
  private readValue(): boolean {
    const b = this.buf;
    while (this.i < b.length) {
      if (this.inString) {
        const q = this.stringEnd(this.i);
        if (q < 0) {
          // Keep a trailing run of backslashes for the next piece to judge.
          let k = b.length;
          while (k > this.i && b.charCodeAt(k - 1) === 92) k--;
          this.i = k;
          return false;
        }
        this.inString = false;
        this.i = q + 1;
        if (this.nest === 0) return this.emit(this.i);
        continue;
      }
      const c = b.charCodeAt(this.i);
      if (c === 34) {
        this.inString = true;
        this.i++;
      } else if (c === 123 || c === 91) {
        this.nest++;
        this.i++;
      } else if (c === 125 || c === 93) {
        if (this.nest === 0) return this.finishScalar(this.i);
        this.nest--;
        this.i++;
        if (this.nest === 0) return this.emit(this.i);
      } else if (c === 44 && this.nest === 0) {
        return this.finishScalar(this.i);
      } else {
        this.i++;
      }
    }
    return false;
  }

  /** A number, true, false or null ends at the comma or bracket after it. */
  private finishScalar(at: number): boolean {
    this.i = at;
    if (this.buf.slice(this.start, at).trim() === "") this.fail("a value expected");
    return this.emit(at);
  }

  private emit(end: number): boolean {
    this.onMember({ key: this.key, depth: this.open.length as 1 | 2, text: this.buf.slice(this.start, end) });
    this.state = "after";
    return true;
  }
}
