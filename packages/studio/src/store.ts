/**
 * The cache of admin resources on screen, kept fresh by the live stream.
 *
 * A page asks for a resource key with `useResource(key, load)`; while it is
 * mounted the key is "on screen". Live frames go through `staleKeys`
 * (resources.ts): only the keys a signal is about are refetched; a resync
 * refetches every key on screen. `calls` events go to `onCall` listeners
 * (overview) and every event to `onEvent` listeners (the audit page's live
 * rows) without any request; a resync (the stream's gap marker: events were
 * dropped or cannot be replayed) goes to `onResync` listeners, which refetch
 * what they built from events.
 */
import { useEffect, useState } from "preact/hooks"
import { type LiveFrame, staleKeys } from "./resources.ts"

interface Entry {
  load: () => Promise<unknown>
  data: unknown
  error: unknown
  loading: boolean
  mounted: number
  listeners: Set<() => void>
  generation: number
}

const entries = new Map<string, Entry>()
const callListeners = new Set<(data: unknown) => void>()
const eventListeners = new Set<(topic: string, data: unknown) => void>()
const resyncListeners = new Set<() => void>()

const notify = (entry: Entry) => {
  for (const l of entry.listeners) l()
}

const fetchKey = (key: string) => {
  const entry = entries.get(key)
  if (entry === undefined) return
  const generation = ++entry.generation
  entry.loading = true
  notify(entry)
  entry.load().then(
    (data) => {
      if (generation !== entry.generation) return
      entry.data = data
      entry.error = undefined
      entry.loading = false
      notify(entry)
    },
    (error: unknown) => {
      if (generation !== entry.generation) return
      entry.error = error
      entry.loading = false
      notify(entry)
    }
  )
}

/** The keys of every mounted resource. */
export const onScreen = (): Array<string> => [...entries].filter(([, e]) => e.mounted > 0).map(([k]) => k)

/** Refetches `key` now (after a write made from this page, for instance). */
export const refresh = (key: string) => fetchKey(key)

/** Applies one live frame. */
export const applyFrame = (frame: LiveFrame) => {
  if (frame._tag === "event" && frame.topic === "calls") { for (const l of callListeners) l(frame.data) }
  if (frame._tag === "event") { for (const l of eventListeners) l(frame.topic, frame.data) }
  if (frame._tag === "resync") { for (const l of resyncListeners) l() }
  for (const key of staleKeys(frame, onScreen())) fetchKey(key)
}

export const onCall = (listener: (data: unknown) => void) => {
  callListeners.add(listener)
  return () => void callListeners.delete(listener)
}

/** Every event with data (`calls`, `admin`, ...), as it arrives. */
export const onEvent = (listener: (topic: string, data: unknown) => void) => {
  eventListeners.add(listener)
  return () => void eventListeners.delete(listener)
}

/** Every resync: what was built from events may have missed some. */
export const onResync = (listener: () => void) => {
  resyncListeners.add(listener)
  return () => void resyncListeners.delete(listener)
}

/** Forgets everything (sign-out). */
export const reset = () => entries.clear()

export interface Resource<A> {
  readonly data: A | undefined
  readonly error: unknown
  readonly loading: boolean
  readonly reload: () => void
}

export const useResource = <A>(key: string, load: () => Promise<A>): Resource<A> => {
  const [, setTick] = useState(0)
  useEffect(() => {
    let entry = entries.get(key)
    const fresh = entry === undefined
    if (entry === undefined) {
      entry = {
        load,
        data: undefined,
        error: undefined,
        loading: true,
        mounted: 0,
        listeners: new Set(),
        generation: 0
      }
      entries.set(key, entry)
    }
    entry.load = load
    entry.mounted++
    const listener = () => setTick((n) => n + 1)
    entry.listeners.add(listener)
    // a page shown again refetches: it may have missed signals while it was not on screen
    if (fresh || entry.mounted === 1) fetchKey(key)
    return () => {
      entry.mounted--
      entry.listeners.delete(listener)
    }
  }, [key])
  const entry = entries.get(key)
  return {
    data: entry?.data as A | undefined,
    error: entry?.error,
    loading: entry?.loading ?? true,
    reload: () => fetchKey(key)
  }
}
