/** Reading an HTTP answer's body without letting its sender make us hold more than we chose. */
/** The answer's text, or `undefined` past `limit` bytes (then the rest is not read). */
export async function peek(body: AsyncIterable<Buffer>, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
