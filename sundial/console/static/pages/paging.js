// Pages of a listing by their number: the API pages by token, so the token of each page reached is
// kept (per filter, for as long as the console is open) and a page not reached yet is walked to.

const known = new Map();

// tokens[k] is the next_token that lists page k (null for the first).
export function pageTokens(filters) {
  const key = JSON.stringify(filters);
  if (!known.has(key)) known.set(key, [null]);
  return known.get(key);
}

// The page at `index`, or the last one when the listing ends before it: {index, answer}.
export async function walkTo(tokens, index, fetchPage) {
  let at = Math.min(index, tokens.length - 1);
  let answer = await fetchPage(tokens[at]);
  while (at < index && answer.next_token) {
    tokens[at + 1] = answer.next_token;
    at += 1;
    answer = await fetchPage(tokens[at]);
  }
  if (answer.next_token) tokens[at + 1] = answer.next_token;
  else tokens.length = at + 1;
  return { index: at, answer };
}
