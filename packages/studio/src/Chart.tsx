/** A uPlot time-series chart (bundled; no CDN), redrawn in place when its data changes. */
import { useEffect, useRef } from "preact/hooks"
import uPlot from "uplot"
import "uplot/dist/uPlot.min.css"

export interface SeriesSpec {
  readonly label: string
  readonly stroke: string
  readonly fill?: string
  /** Draw each point (for sparse series, where a lone value has no line). */
  readonly points?: boolean
  /** Draw bars (counts per interval: one call is a visible bar, not a hairline spike). */
  readonly bars?: boolean
}

// the y axis spans at least 0..1 (0..5 ms for latency), so a lone small value is not drawn at the very top
const yRange = (least: number): uPlot.Range.Function => (_u, _min, max) => [0, Math.max(least, max * 1.1)]

export const Chart = (
  props: {
    title: string
    series: ReadonlyArray<SeriesSpec>
    data: uPlot.AlignedData
    unit?: string
    height?: number
    /** The least top of the y axis. */
    least?: number
    /** Seconds between points: the x axis extends half a step past each end, so the first and last bar or
     * point is drawn whole, not cut at the edge. */
    step?: number
  }
) => {
  const host = useRef<HTMLDivElement>(null)
  const plot = useRef<uPlot | null>(null)
  useEffect(() => {
    const el = host.current!
    const width = Math.max(200, el.clientWidth || 480)
    plot.current = new uPlot(
      {
        width,
        height: props.height ?? 180,
        series: [
          {},
          ...props.series.map((s) => ({
            label: s.label,
            stroke: s.stroke,
            width: s.bars ? 1 : 2,
            ...(s.fill === undefined ? {} : { fill: s.fill }),
            ...(s.points ? { points: { show: true, size: 8, fill: s.stroke } } : {}),
            ...(s.bars ? { paths: uPlot.paths.bars!({ size: [0.7, 24], align: 0 }) } : {})
          }))
        ],
        scales: {
          x: { time: true, range: (_u, min, max) => [min - (props.step ?? 0) / 2, max + (props.step ?? 0) / 2] },
          y: { range: yRange(props.least ?? 1) }
        },
        axes: [{}, { label: props.unit ?? "" }],
        legend: { show: true },
        cursor: { drag: { x: false, y: false } }
      },
      props.data,
      el
    )
    // the chart follows its card's width (a phone, a resized window, a grid that wraps)
    const observer = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth)
      if (plot.current !== null && Math.abs(plot.current.width - w) > 1) {
        plot.current.setSize({ width: w, height: props.height ?? 180 })
      }
    })
    observer.observe(el)
    return () => {
      observer.disconnect()
      plot.current?.destroy()
      plot.current = null
    }
  }, [])
  useEffect(() => {
    plot.current?.setData(props.data)
  }, [props.data])
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={host} role="img" aria-label={props.title} />
    </figure>
  )
}
