/**
 * A growable list of matches, `(start, end, kind)` triples in one `Int32Array`.
 *
 * **Rules**
 *
 * - Matches are appended in text order and never overlap; whoever appends
 *   keeps that order (the scanner and the custom-pattern merge both do).
 * - One list is owned by one engine and reset per string, so a call that finds
 *   nothing allocates nothing; the array only grows, by doubling.
 *
 * @since 0.1.0
 */
export class Matches {
  data = new Int32Array(3 * 64)
  length = 0

  reset(): void {
    this.length = 0
  }

  push(start: number, end: number, kind: number): void {
    const at = this.length * 3
    if (at + 3 > this.data.length) {
      const grown = new Int32Array(this.data.length * 2)
      grown.set(this.data)
      this.data = grown
    }
    this.data[at] = start
    this.data[at + 1] = end
    this.data[at + 2] = kind
    this.length++
  }

  start(i: number): number {
    return this.data[i * 3]!
  }

  end(i: number): number {
    return this.data[i * 3 + 1]!
  }

  kind(i: number): number {
    return this.data[i * 3 + 2]!
  }
}
