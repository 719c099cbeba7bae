/**
 * Which topics a subscriber receives.
 *
 * **Details**
 *
 * A filter is a set of topic names, or every topic. The hub indexes
 * subscribers by topic, so a publish visits only the subscribers of its topic
 * (plus those of every topic). The same filter selects the replayed events.
 *
 * @since 0.1.0
 */

/** Every topic, or the listed ones. */
export type Filter =
  | { readonly _tag: "All" }
  | { readonly _tag: "Topics"; readonly topics: ReadonlySet<string> }

/** Every topic. */
export const all: Filter = { _tag: "All" }

/** Only the given topics. */
export const topics = (names: Iterable<string>): Filter => ({ _tag: "Topics", topics: new Set(names) })

/** `true` when `filter` accepts `topic`. */
export const matches = (filter: Filter, topic: string): boolean => filter._tag === "All" || filter.topics.has(topic)
