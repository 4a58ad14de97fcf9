package main

// svgchart: the charts of lshdb report, written as inline SVG by hand: a
// bar chart (histograms, with a linear or logarithmic count axis) and the
// S-curve with its false-positive and false-negative areas shaded. The
// output is well-formed XML (the report page is parsed as XML by its
// tests), needs no script and fetches nothing.
//
// Every chart is one <svg class="chart" id=...>; a bar is a
// <rect class="bar"> carrying its value (data-value) and a <title> that
// browsers show on hover; the curve is a <path class="curve">, the shaded
// areas <path class="fp-area"> and <path class="fn-area">.

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Chart geometry: the SVG's size and the plot's margins, in pixels.
const (
	chartW, chartH             = 960, 380
	marginL, marginR           = 80, 24
	marginTop, marginBottom    = 50, 84
	plotW                      = chartW - marginL - marginR
	plotH                      = chartH - marginTop - marginBottom
	charW                      = 7.5 // the width of a tick label's character at 12px, for thinning labels
	chartFont                  = `font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"`
	colorBar, colorCurve       = "#3b6fb6", "#1f3f8f"
	colorFP, colorFN, colorThr = "#e8913a", "#c0392b", "#444"
)

// bar is one bar of a barChart.
type bar struct {
	Label string  // under the bar (thinned out when bars are narrow)
	Value float64 // its height, ≥ 0
	Note  string  // its tooltip
}

// barChart is a histogram: bars of equal width over category labels.
type barChart struct {
	ID, Title, XLabel, YLabel string
	Bars                      []bar
	// LogY draws the count axis in powers of ten, from 0.5 so that a bar
	// of 1 stays visible.
	LogY bool
	// Mark, when set, draws a dashed vertical line at that fraction of
	// the x axis (0: the left edge of the first bar, 1: the right edge of
	// the last), labelled MarkLabel.
	Mark      *float64
	MarkLabel string
	// Empty is the note shown when no bar has a height. Default:
	// "nothing to show".
	Empty string
}

// skewed reports whether the values span enough orders of magnitude to
// want a logarithmic axis: the largest is at least 50 times the smallest
// non-zero one.
func skewed(vals []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vals {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return hi > 0 && hi/lo >= 50
}

// niceStep returns a tick step of 1, 2 or 5 times a power of ten that
// cuts [0, hi] into at most about n intervals.
func niceStep(hi float64, n int) float64 {
	if hi <= 0 {
		return 1
	}
	raw := hi / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return max(m*p, 1) // counts: no fractional ticks
		}
	}
	return 10 * p
}

// fmtCount writes a tick value: 1200 as "1,200", 20000 as "20k", 2.5e6
// as "2.5M".
func fmtCount(v float64) string {
	switch {
	case v >= 1e9 && math.Mod(v, 1e8) == 0:
		return strconv.FormatFloat(v/1e9, 'f', -1, 64) + "G"
	case v >= 1e6 && math.Mod(v, 1e5) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4 && math.Mod(v, 1e3) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return groupDigits(int64(math.Round(v)))
}

// groupDigits writes n with thousands separators: 1234567 as "1,234,567".
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// svgOpen starts a chart of height h (chartH, or less when its x labels
// need less room).
func svgOpen(b *strings.Builder, id, title string, h int) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="%s" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="12" role="img" aria-label="%s">`+"\n",
		html.EscapeString(id), chartW, h, chartW, h, chartFont, html.EscapeString(title))
	fmt.Fprintf(b, `<text class="title" x="%d" y="24" font-size="15" font-weight="600">%s</text>`+"\n", marginL, html.EscapeString(title))
}

// axisLabels writes the axes' names, the x axis's at height xy.
func axisLabels(b *strings.Builder, xlabel, ylabel string, xy int) {
	fmt.Fprintf(b, `<text class="xlabel" x="%d" y="%d" text-anchor="middle" font-size="13">%s</text>`+"\n", marginL+plotW/2, xy, html.EscapeString(xlabel))
	cy := marginTop + plotH/2
	fmt.Fprintf(b, `<text class="ylabel" x="18" y="%d" transform="rotate(-90 18 %d)" text-anchor="middle" font-size="13">%s</text>`+"\n", cy, cy, html.EscapeString(ylabel))
}

// svg writes the chart.
func (c *barChart) svg() string {
	var b strings.Builder
	n := len(c.Bars)
	slot := plotW / math.Max(float64(n), 1)
	gap := math.Min(slot*0.15, 6)
	// Labels that do not fit under their bars are turned by 30 degrees
	// when that is enough (a turned label needs about 2 font heights
	// across), else thinned out to every k-th one.
	widest := 0
	for _, br := range c.Bars {
		widest = max(widest, len([]rune(br.Label)))
	}
	k := max(1, int(math.Ceil((float64(widest)*charW+10)/slot)))
	turn := k > 1 && slot >= 26 && float64(widest)*charW/2 <= marginBottom-46
	if turn {
		k = 1
	}
	// NB: the turned labels take the whole bottom margin; level ones
	// leave 28 px that the picture need not have.
	h, xlabelY := chartH-28, marginTop+plotH+46
	if turn {
		h, xlabelY = chartH, chartH-12
	}
	svgOpen(&b, c.ID, c.Title, h)
	x0, y0 := float64(marginL), float64(marginTop+plotH) // the plot's origin
	hi := 0.0
	for _, br := range c.Bars {
		hi = max(hi, br.Value)
	}
	// yOf maps a value to its height above the axis, in pixels.
	var yOf func(v float64) float64
	type tick struct {
		v     float64
		label string
	}
	var ticks []tick
	if c.LogY {
		top := math.Pow(10, math.Ceil(math.Log10(max(hi, 1))))
		if top == hi && top >= 10 { // room above the highest bar
			top *= 10
		}
		lo := 0.5
		yOf = func(v float64) float64 {
			if v <= 0 {
				return 0
			}
			return math.Log10(v/lo) / math.Log10(top/lo) * plotH
		}
		for v := 1.0; v <= top; v *= 10 {
			ticks = append(ticks, tick{v, fmtCount(v)})
		}
	} else {
		step := niceStep(hi, 5)
		top := math.Max(step, math.Ceil(hi/step)*step)
		yOf = func(v float64) float64 { return v / top * plotH }
		for v := 0.0; v <= top+step/2; v += step {
			ticks = append(ticks, tick{v, fmtCount(v)})
		}
	}
	for _, t := range ticks {
		y := y0 - yOf(t.v)
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e3e3"/>`+"\n", x0, y, x0+plotW, y)
		fmt.Fprintf(&b, `<text class="ytick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-8, y+4, t.label)
	}
	for i, br := range c.Bars {
		h := yOf(br.Value)
		x := x0 + float64(i)*slot + gap/2
		fmt.Fprintf(&b, `<rect class="bar" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s" data-value="%s"><title>%s</title></rect>`+"\n",
			x, y0-h, slot-gap, h, colorBar, strconv.FormatFloat(br.Value, 'g', -1, 64), html.EscapeString(br.Note))
		cx := x0 + (float64(i)+0.5)*slot
		switch {
		case turn:
			fmt.Fprintf(&b, `<text class="xtick" x="%.2f" y="%.1f" text-anchor="end" transform="rotate(-30 %.2f %.1f)">%s</text>`+"\n", cx+4, y0+16, cx+4, y0+16, html.EscapeString(br.Label))
		case i%k == 0:
			fmt.Fprintf(&b, `<text class="xtick" x="%.2f" y="%.1f" text-anchor="middle">%s</text>`+"\n", cx, y0+18, html.EscapeString(br.Label))
		}
	}
	if c.Mark != nil {
		// NB: the line rises above the plot and its label sits there, clear
		// of the bars whatever their heights.
		x := x0 + *c.Mark*plotW
		fmt.Fprintf(&b, `<line class="mark" x1="%.2f" y1="%.1f" x2="%.2f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", x, y0, x, float64(marginTop-12), colorFN)
		anchor, dx := "end", -5.0
		if *c.Mark < 0.3 {
			anchor, dx = "start", 5
		}
		fmt.Fprintf(&b, `<text class="mark-label" x="%.2f" y="%d" text-anchor="%s" fill="%s">%s</text>`+"\n", x+dx, marginTop-4, anchor, colorFN, html.EscapeString(c.MarkLabel))
	}
	if hi == 0 {
		// On white, over the mark's line if any.
		note := cmp.Or(c.Empty, "nothing to show")
		w := float64(len([]rune(note)))*8 + 16
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="26" fill="white"/>`+"\n", x0+plotW/2-w/2, y0-plotH/2-18, w)
		fmt.Fprintf(&b, `<text class="empty" x="%.1f" y="%.1f" text-anchor="middle" font-size="14" fill="#777">%s</text>`+"\n",
			x0+plotW/2, y0-plotH/2, html.EscapeString(note))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x0, y0, x0+plotW, y0)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x0, y0, x0, float64(marginTop))
	ylabel := c.YLabel
	if c.LogY {
		ylabel += " (log scale)"
	}
	axisLabels(&b, c.XLabel, ylabel, xlabelY)
	b.WriteString("</svg>\n")
	return b.String()
}

// curveChart is the S-curve P(s) over s in [0, 1] with the threshold t
// marked, the false-positive area (under the curve left of t) and the
// false-negative area (above it right of t) shaded.
type curveChart struct {
	ID, Title string
	P         func(s float64) float64
	T         float64
	// Points is the number of segments the curve is drawn with.
	Points int
	// FP and FN are the areas, written in the legend.
	FP, FN float64
}

// The legend's size, in pixels.
const legendW, legendH = 350, 44

// clear reports whether the curve stays out of the box [s0, s1] × [p0, p1]
// (in the chart's units), with a margin of 0.03 in P.
func (c *curveChart) clear(s0, s1, p0, p1 float64) bool {
	for i := 0; i <= 100; i++ {
		s := s0 + (s1-s0)*float64(i)/100
		if v := c.P(s); v >= p0-0.03 && v <= p1+0.03 {
			return false
		}
	}
	return true
}

func (c *curveChart) svg() string {
	var b strings.Builder
	svgOpen(&b, c.ID, c.Title, chartH-28)
	x0, y0 := float64(marginL), float64(marginTop+plotH)
	x := func(s float64) float64 { return x0 + s*plotW }
	y := func(p float64) float64 { return y0 - p*plotH }
	for i := 0; i <= 10; i++ {
		v := float64(i) / 10
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e3e3"/>`+"\n", x(v), y(0), x(v), y(1))
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e3e3"/>`+"\n", x(0), y(v), x(1), y(v))
		fmt.Fprintf(&b, `<text class="xtick" x="%.1f" y="%.1f" text-anchor="middle">%.1f</text>`+"\n", x(v), y0+18, v)
		fmt.Fprintf(&b, `<text class="ytick" x="%.1f" y="%.1f" text-anchor="end">%.1f</text>`+"\n", x0-8, y(v)+4, v)
	}
	n := max(c.Points, 2)
	pts := make([][2]float64, n+1)
	for i := range pts {
		s := float64(i) / float64(n)
		pts[i] = [2]float64{s, c.P(s)}
	}
	// The areas, each closed along the curve with its exact end at t.
	var fp, fn strings.Builder
	fmt.Fprintf(&fp, "M%.2f %.2f", x(0), y(0))
	for _, p := range pts {
		if p[0] < c.T {
			fmt.Fprintf(&fp, " L%.2f %.2f", x(p[0]), y(p[1]))
		}
	}
	fmt.Fprintf(&fp, " L%.2f %.2f L%.2f %.2f Z", x(c.T), y(c.P(c.T)), x(c.T), y(0))
	fmt.Fprintf(&fn, "M%.2f %.2f L%.2f %.2f", x(c.T), y(1), x(c.T), y(c.P(c.T)))
	for _, p := range pts {
		if p[0] > c.T {
			fmt.Fprintf(&fn, " L%.2f %.2f", x(p[0]), y(p[1]))
		}
	}
	fmt.Fprintf(&fn, " L%.2f %.2f Z", x(1), y(1))
	fmt.Fprintf(&b, `<path class="fp-area" d="%s" fill="%s" fill-opacity="0.35" stroke="none" data-area="%s"><title>false-positive area %.4f</title></path>`+"\n",
		fp.String(), colorFP, strconv.FormatFloat(c.FP, 'g', -1, 64), c.FP)
	fmt.Fprintf(&b, `<path class="fn-area" d="%s" fill="%s" fill-opacity="0.30" stroke="none" data-area="%s"><title>false-negative area %.4f</title></path>`+"\n",
		fn.String(), colorFN, strconv.FormatFloat(c.FN, 'g', -1, 64), c.FN)
	var path strings.Builder
	for i, p := range pts {
		cmd := " L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&path, "%s%.2f %.2f", cmd, x(p[0]), y(p[1]))
	}
	fmt.Fprintf(&b, `<path class="curve" d="%s" fill="none" stroke="%s" stroke-width="2.5"/>`+"\n", path.String(), colorCurve)
	pt := c.P(c.T)
	fmt.Fprintf(&b, `<line class="mark" x1="%.2f" y1="%.1f" x2="%.2f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", x(c.T), y(0), x(c.T), y(1), colorThr)
	fmt.Fprintf(&b, `<circle class="at-threshold" cx="%.2f" cy="%.2f" r="5" fill="%s"/>`+"\n", x(c.T), y(pt), colorThr)
	// The point's label: two short lines below the point, right of the
	// threshold line where the curve has left room (it is near 1 there),
	// else left of it, over the shaded area.
	anchor, dx := "start", 8.0
	if c.T > 0.85 {
		anchor, dx = "end", -8
	}
	ly0 := math.Min(y(pt)+24, y0-30)
	fmt.Fprintf(&b, `<text class="mark-label" x="%.2f" y="%.2f" text-anchor="%s" font-weight="600">t = %s</text>`+"\n",
		x(c.T)+dx, ly0, anchor, strconv.FormatFloat(c.T, 'f', -1, 64))
	fmt.Fprintf(&b, `<text class="mark-label" x="%.2f" y="%.2f" text-anchor="%s">P(t) = %.4f</text>`+"\n", x(c.T)+dx, ly0+16, anchor, pt)
	// The legend, in the upper left when the curve is low there, else in
	// the lower right (where an S-curve is high), on white.
	lx, ly := x(0)+14, float64(marginTop)+14
	if !c.clear(0, float64(legendW+14)/plotW, 1-float64(legendH+14)/plotH, 1) {
		lx, ly = x(1)-legendW-6, y0-legendH-8
	}
	fmt.Fprintf(&b, `<rect class="legend-box" x="%.1f" y="%.1f" width="%d" height="%d" fill="white" fill-opacity="0.9" stroke="#ddd"/>`+"\n", lx-8, ly-7, legendW, legendH)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="12" fill="%s" fill-opacity="0.6"/>`+"\n", lx, ly, colorFP)
	fmt.Fprintf(&b, `<text class="legend" x="%.1f" y="%.1f">false-positive area (candidates below t): %.4f</text>`+"\n", lx+20, ly+10, c.FP)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="12" fill="%s" fill-opacity="0.6"/>`+"\n", lx, ly+20, colorFN)
	fmt.Fprintf(&b, `<text class="legend" x="%.1f" y="%.1f">false-negative area (missed at or above t): %.4f</text>`+"\n", lx+20, ly+30, c.FN)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x(0), y(0), x(1), y(0))
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x(0), y(0), x(0), y(1))
	axisLabels(&b, "Jaccard similarity s", "P(candidate | s)", marginTop+plotH+46)
	b.WriteString("</svg>\n")
	return b.String()
}
