package main

import (
	"encoding/xml"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// xnode is any element of a parsed page or chart.
type xnode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []xnode    `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n *xnode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *xnode) num(t *testing.T, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.XMLName.Local, name, n.attr(name), err)
	}
	return v
}

// all returns the elements under n (n included) for which keep is true,
// in document order.
func (n *xnode) all(keep func(*xnode) bool) []*xnode {
	var out []*xnode
	var walk func(*xnode)
	walk = func(x *xnode) {
		if keep(x) {
			out = append(out, x)
		}
		for i := range x.Nodes {
			walk(&x.Nodes[i])
		}
	}
	walk(n)
	return out
}

func (n *xnode) class(c string) []*xnode {
	return n.all(func(x *xnode) bool { return strings.Contains(" "+x.attr("class")+" ", " "+c+" ") })
}

// text returns the character data under n.
func (n *xnode) text() string {
	var b strings.Builder
	for _, x := range n.all(func(*xnode) bool { return true }) {
		b.WriteString(x.Text)
	}
	return b.String()
}

// parseXML parses s strictly as XML, failing the test on any error.
func parseXML(t *testing.T, s string) *xnode {
	t.Helper()
	var n xnode
	d := xml.NewDecoder(strings.NewReader(s))
	d.Strict = true
	if err := d.Decode(&n); err != nil {
		t.Fatalf("not well-formed XML: %v", err)
	}
	return &n
}

var pathPoint = regexp.MustCompile(`[ML]\s*(-?[\d.]+) (-?[\d.]+)`)

// points returns the coordinates of a path's M and L commands.
func points(t *testing.T, d string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, m := range pathPoint.FindAllStringSubmatch(d, -1) {
		x, err1 := strconv.ParseFloat(m[1], 64)
		y, err2 := strconv.ParseFloat(m[2], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("path point %q", m[0])
		}
		out = append(out, [2]float64{x, y})
	}
	return out
}

// Ensure that a bar chart has one bar per value carrying it, standing on
// one baseline, with heights proportional to the values on a linear axis
// and in their order on a log axis, all inside the picture, and tick
// labels that do not overlap.
func TestBarChartStructure(t *testing.T) {
	vals := []float64{5, 0, 12, 3, 1000, 1, 40}
	for _, logY := range []bool{false, true} {
		var bars []bar
		for i, v := range vals {
			bars = append(bars, bar{Label: "bin " + strconv.Itoa(i), Value: v, Note: "n=" + strconv.Itoa(int(v))})
		}
		c := barChart{ID: "c", Title: "T <&> x", XLabel: "x", YLabel: "y", Bars: bars, LogY: logY}
		svg := parseXML(t, c.svg())
		if svg.XMLName.Local != "svg" || svg.attr("id") != "c" || svg.attr("class") != "chart" {
			t.Fatalf("root %v id %q class %q", svg.XMLName, svg.attr("id"), svg.attr("class"))
		}
		if got := svg.class("title")[0].text(); got != "T <&> x" {
			t.Errorf("title %q", got)
		}
		rects := svg.class("bar")
		if len(rects) != len(vals) {
			t.Fatalf("log %v: %d bars for %d values", logY, len(rects), len(vals))
		}
		base := rects[0].num(t, "y") + rects[0].num(t, "height")
		h := make([]float64, len(vals))
		for i, r := range rects {
			if v := r.num(t, "data-value"); v != vals[i] {
				t.Errorf("bar %d carries %v, want %v", i, v, vals[i])
			}
			if got := r.all(func(x *xnode) bool { return x.XMLName.Local == "title" }); len(got) != 1 || got[0].Text != "n="+strconv.Itoa(int(vals[i])) {
				t.Errorf("bar %d: tooltip %v", i, got)
			}
			h[i] = r.num(t, "height")
			if y := r.num(t, "y"); math.Abs(y+h[i]-base) > 0.02 || y < marginTop-0.01 || r.num(t, "x") < marginL || r.num(t, "x")+r.num(t, "width") > chartW-marginR+0.01 {
				t.Errorf("bar %d at x %v y %v height %v: off the baseline %v or outside the plot", i, r.num(t, "x"), y, h[i], base)
			}
			if (vals[i] == 0) != (h[i] == 0) {
				t.Errorf("bar %d: value %v, height %v", i, vals[i], h[i])
			}
		}
		k := h[4] / vals[4] // pixels per unit, from the largest bar
		for i := range vals {
			if !logY && math.Abs(h[i]-vals[i]*k) > 0.006 { // the heights are written to 0.01 px
				t.Errorf("linear: bar %d of %v is %v px high, want %v", i, vals[i], h[i], vals[i]*k)
			}
			for j := range vals {
				if vals[i] > vals[j] && !(h[i] > h[j]) {
					t.Errorf("log %v: value %v above %v but height %v not above %v", logY, vals[i], vals[j], h[i], h[j])
				}
			}
		}
		// The count axis: powers of ten on a log axis.
		var ticks []string
		for _, x := range svg.class("ytick") {
			ticks = append(ticks, x.Text)
		}
		if logY && strings.Join(ticks, " ") != "1 10 100 1,000 10k" {
			t.Errorf("log ticks %q", ticks)
		}
		if !logY && (ticks[0] != "0" || len(ticks) < 3) {
			t.Errorf("linear ticks %q", ticks)
		}
		if yl := svg.class("ylabel")[0].Text; strings.Contains(yl, "log") != logY {
			t.Errorf("log %v: y label %q", logY, yl)
		}
	}
}

// Ensure that many bars with long labels get thinned labels that do not
// overlap, and that a chart without bars says so.
func TestBarChartLabelsAndEmpty(t *testing.T) {
	var bars []bar
	for i := range 60 {
		bars = append(bars, bar{Label: strconv.Itoa(1<<20) + "-" + strconv.Itoa(i), Value: float64(i)})
	}
	svg := parseXML(t, (&barChart{ID: "c", Bars: bars}).svg())
	labels := svg.class("xtick")
	if len(labels) < 2 || len(labels) >= 60 {
		t.Fatalf("%d labels for 60 bars: not thinned", len(labels))
	}
	for i := 1; i < len(labels); i++ {
		gap := labels[i].num(t, "x") - labels[i-1].num(t, "x")
		if w := float64(len(labels[i].Text)) * charW; gap < w {
			t.Errorf("labels %q and %q are %v px apart, narrower than %v", labels[i-1].Text, labels[i].Text, gap, w)
		}
	}
	svg = parseXML(t, (&barChart{ID: "e"}).svg())
	if len(svg.class("bar")) != 0 || len(svg.class("empty")) != 1 {
		t.Error("an empty chart: want no bar and a note")
	}
}

// sCurve is P(s) = 1 − (1 − s^r)^b, written here from its definition.
func sCurve(s float64, b, r int) float64 { return 1 - math.Pow(1-math.Pow(s, float64(r)), float64(b)) }

// simpson integrates f over [a, c] with n (even) intervals.
func simpson(f func(float64) float64, a, c float64, n int) float64 {
	h := (c - a) / float64(n)
	sum := f(a) + f(c)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(a+float64(i)*h)
	}
	return sum * h / 3
}

// Ensure that the S-curve chart draws P(s) = 1 − (1 − s^r)^b at its
// points (mapped back from pixels), and shades the false-positive area
// left of t and the false-negative area right of it, carrying the areas
// that an independent integration gives.
func TestCurveChartStructure(t *testing.T) {
	const b, r, thr = 16, 6, 0.8
	p := func(s float64) float64 { return sCurve(s, b, r) }
	fp := simpson(p, 0, thr, 2000)
	fn := simpson(func(s float64) float64 { return 1 - p(s) }, thr, 1, 2000)
	c := curveChart{ID: "s", Title: "S", P: p, T: thr, Points: 200, FP: fp, FN: fn}
	svg := parseXML(t, c.svg())
	curve := svg.class("curve")
	if len(curve) != 1 {
		t.Fatalf("%d curves", len(curve))
	}
	pts := points(t, curve[0].attr("d"))
	if len(pts) != 201 {
		t.Fatalf("%d curve points, want 201", len(pts))
	}
	for i, pt := range pts {
		s := (pt[0] - marginL) / plotW
		got := (marginTop + plotH - pt[1]) / plotH
		if math.Abs(s-float64(i)/200) > 1e-4 || math.Abs(got-p(s)) > 0.01/plotH*2 {
			t.Errorf("point %d at (%v, %v): s %v, P %v, want %v", i, pt[0], pt[1], s, got, p(s))
		}
	}
	xt := marginL + thr*plotW
	for _, k := range []string{"fp-area", "fn-area"} {
		a := svg.class(k)
		if len(a) != 1 {
			t.Fatalf("%d %s", len(a), k)
		}
		want := fp
		if k == "fn-area" {
			want = fn
		}
		if got := a[0].num(t, "data-area"); math.Abs(got-want) > 1e-6 {
			t.Errorf("%s carries %v; Simpson's rule gives %v", k, got, want)
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, pt := range points(t, a[0].attr("d")) {
			lo, hi = min(lo, pt[0]), max(hi, pt[0])
		}
		if k == "fp-area" && (math.Abs(lo-marginL) > 0.01 || math.Abs(hi-xt) > 0.01) {
			t.Errorf("fp-area spans x %v-%v, want %v-%v", lo, hi, float64(marginL), xt)
		}
		if k == "fn-area" && (math.Abs(lo-xt) > 0.01 || math.Abs(hi-(marginL+plotW)) > 0.01) {
			t.Errorf("fn-area spans x %v-%v, want %v-%v", lo, hi, xt, float64(marginL+plotW))
		}
	}
	if n := len(svg.class("at-threshold")); n != 1 {
		t.Errorf("%d threshold points", n)
	}
}

// Ensure that the tick helpers write what a person would.
func TestTickFormats(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 5: "5", 1000: "1,000", 1234: "1,234", 10000: "10k", 1e6: "1M", 2.5e6: "2.5M", 3e9: "3G", 123456789: "123,456,789"} {
		if got := fmtCount(v); got != want {
			t.Errorf("fmtCount(%v) = %q, want %q", v, got, want)
		}
	}
	for _, c := range []struct{ hi, want float64 }{{0, 1}, {3, 1}, {12, 5}, {1000, 200}, {73, 20}} {
		if got := niceStep(c.hi, 5); got != c.want {
			t.Errorf("niceStep(%v) = %v, want %v", c.hi, got, c.want)
		}
	}
}

// Ensure that the legend of the S-curve never covers the curve, for
// bandings whose curve rises early (low thresholds) or late.
func TestCurveLegendClear(t *testing.T) {
	for _, c := range []struct {
		b, r int
		t    float64
	}{{16, 6, 0.8}, {17, 2, 0.5}, {35, 3, 0.3}, {9, 13, 0.9}, {20, 5, 0.6}, {64, 1, 0.05}} {
		p := func(s float64) float64 { return sCurve(s, c.b, c.r) }
		svg := parseXML(t, (&curveChart{ID: "s", P: p, T: c.t, Points: 200}).svg())
		box := svg.class("legend-box")
		if len(box) != 1 {
			t.Fatalf("%d legends", len(box))
		}
		x0, y0 := box[0].num(t, "x"), box[0].num(t, "y")
		x1, y1 := x0+box[0].num(t, "width"), y0+box[0].num(t, "height")
		if x0 < marginL || x1 > marginL+plotW || y0 < marginTop || y1 > marginTop+plotH {
			t.Errorf("b=%d r=%d: the legend (%v,%v)-(%v,%v) leaves the plot", c.b, c.r, x0, y0, x1, y1)
		}
		for _, pt := range points(t, svg.class("curve")[0].attr("d")) {
			if pt[0] >= x0 && pt[0] <= x1 && pt[1] >= y0 && pt[1] <= y1 {
				t.Errorf("b=%d r=%d t=%v: the curve passes under the legend at (%v, %v)", c.b, c.r, c.t, pt[0], pt[1])
				break
			}
		}
	}
}

// Ensure that labels too wide for their bars are turned (all of them
// shown) when the bars are wide enough, and that a marked line's label
// sits above the plot, clear of the bars.
func TestBarChartTurnedLabels(t *testing.T) {
	var bars []bar
	for i := range 12 {
		bars = append(bars, bar{Label: bucketBinLabel(i + 1), Value: float64(100 - i)}) // up to "2048-4095"
	}
	m := 0.5
	svg := parseXML(t, (&barChart{ID: "c", Bars: bars, Mark: &m, MarkLabel: "t"}).svg())
	labels := svg.class("xtick")
	if len(labels) != 12 {
		t.Fatalf("%d labels for 12 bars", len(labels))
	}
	for _, l := range labels {
		if !strings.HasPrefix(l.attr("transform"), "rotate(-30 ") {
			t.Errorf("label %q not turned: %q", l.Text, l.attr("transform"))
		}
	}
	ml := svg.class("mark-label")
	if len(ml) != 1 || ml[0].num(t, "y") >= marginTop {
		t.Errorf("mark label %v: want one above the plot (y < %d)", ml, marginTop)
	}
	if e := svg.class("empty"); len(e) != 0 {
		t.Errorf("bars with heights: an empty note %q", e[0].Text)
	}
	svg = parseXML(t, (&barChart{ID: "z", Bars: []bar{{Label: "a"}, {Label: "b"}}, Empty: "no pairs"}).svg())
	if e := svg.class("empty"); len(e) != 1 || e[0].Text != "no pairs" || len(svg.class("bar")) != 2 {
		t.Errorf("all-zero bars: want 2 bars and the note, got %d notes", len(e))
	}
}
