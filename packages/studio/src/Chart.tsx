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
}

export const Chart = (
  props: { title: string; series: ReadonlyArray<SeriesSpec>; data: uPlot.AlignedData; unit?: string; height?: number }
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
            width: 2,
            ...(s.fill === undefined ? {} : { fill: s.fill })
          }))
        ],
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
