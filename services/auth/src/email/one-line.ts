/** Text someone typed, as one bounded line: no line breaks to start a header or a paragraph of their own. */
export function oneLine(text: string, max: number): string {
  return text.replace(/\s+/g, " ").trim().slice(0, max);
}
