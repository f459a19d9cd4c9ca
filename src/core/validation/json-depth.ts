/**
 * How deeply a JSON text nests, found without parsing it: a body of 200,000 nested arrays makes
 * JSON.parse throw a RangeError (stack) and would make every later walk of the value recurse as
 * deep. One pass over the characters, skipping strings.
 */
export const MAX_JSON_DEPTH = 64;

export function jsonDepthExceeds(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
