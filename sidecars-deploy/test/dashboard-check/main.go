// Command dashboard-check evaluates every query of a Grafana dashboard with Prometheus's own
// query engine against scrapes of a running driver, as a Prometheus that scraped it would hold
// them, and says which panel asks for what the driver does not serve.
//
//	dashboard-check -dashboard DASHBOARD.json -instance HOST:PORT SCRAPE...
//
// Each scrape file is the text of one GET /metrics, in order; it goes through Prometheus's text
// parser (any line it rejects fails the check) and is stored with the job and instance labels a
// scrape adds, one scrape interval after the one before. At the last scrape's time the
// dashboard's query variables are evaluated (label_values) and substituted, with Grafana's
// built-in intervals, into each panel's queries; a query must parse, every series selector in it
// must select a series (so that "or vector(0)" cannot hide a misspelt metric) and the query must
// return one. Prints "[FAIL] panel ..." for each panel that does not pass and ends with
// "dashboard: N passed, N failed, 0 skipped"; exits 1 when one failed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
)

// The interval the scrapes are stored at, and so the step Grafana's built-in intervals follow:
// $__rate_interval is four scrape intervals, as Grafana makes it for a 15 s scrape.
const scrapeInterval = 15 * time.Second

var builtins = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "15s",
}

type dashboard struct {
	Panels     []panel    `json:"panels"`
	Templating templating `json:"templating"`
}

type templating struct {
	List []variable `json:"list"`
}

type variable struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Query json.RawMessage `json:"query"`
}

type panel struct {
	Title      string      `json:"title"`
	Type       string      `json:"type"`
	Datasource *datasource `json:"datasource"`
	Targets    []target    `json:"targets"`
	Panels     []panel     `json:"panels"` // a collapsed row's
}

type target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *datasource `json:"datasource"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// The datasource every panel must name: the dashboard's variable, so an import picks one.
const datasourceUID = "${datasource}"

func main() {
	file := flag.String("dashboard", "", "the dashboard's JSON")
	instance := flag.String("instance", "", "the instance label the scrapes are stored with (HOST:PORT)")
	job := flag.String("job", "blockpool", "the job label the scrapes are stored with")
	flag.Parse()
	if *file == "" || *instance == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: dashboard-check -dashboard FILE -instance HOST:PORT SCRAPE...")
		os.Exit(2)
	}
	failed, err := run(os.Stdout, *file, labels.FromStrings("job", *job, "instance", *instance), flag.Args())
	if err != nil {
		fmt.Printf("[FAIL] %v\n", err)
		fmt.Println("dashboard: 0 passed, 1 failed, 0 skipped")
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

// run checks every panel and prints the verdicts; err is what stops the check as a whole.
func run(out io.Writer, file string, target labels.Labels, scrapes []string) (failed bool, err error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return false, err
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return false, fmt.Errorf("%s is not a dashboard's JSON: %w", file, err)
	}
	db, err := teststorage.NewWithError()
	if err != nil {
		return false, err
	}
	defer db.Close()
	start := time.Unix(1_700_000_000, 0)
	for i, name := range scrapes {
		if err := load(db, name, target, start.Add(time.Duration(i)*scrapeInterval)); err != nil {
			return false, err
		}
	}
	c := checker{
		engine: promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute}),
		db:     db,
		at:     start.Add(time.Duration(len(scrapes)-1) * scrapeInterval),
	}
	values, err := c.variables(d)
	if err != nil {
		return false, err
	}
	passed, failures := 0, 0
	for _, p := range flatten(d.Panels) {
		if problems := c.panel(p, values); len(problems) > 0 {
			failures++
			for _, problem := range problems {
				fmt.Fprintf(out, "[FAIL] panel %q: %s\n", p.Title, problem)
			}
		} else {
			passed++
		}
	}
	fmt.Fprintf(out, "dashboard: %d passed, %d failed, 0 skipped\n", passed, failures)
	return failures > 0, nil
}

// load stores one scrape's series at ts, with the target's labels, as a scrape would.
func load(db storage.Appendable, name string, target labels.Labels, ts time.Time) error {
	text, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	p, err := textparse.New(text, "text/plain; version=0.0.4", labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	app := db.Appender(context.Background())
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			_ = app.Rollback()
			return fmt.Errorf("%s does not parse as Prometheus text: %w", name, err)
		}
		if entry != textparse.EntrySeries {
			continue
		}
		_, _, value := p.Series()
		var series labels.Labels
		p.Labels(&series)
		b := labels.NewBuilder(series)
		target.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
		if _, err := app.Append(0, b.Labels(), ts.UnixMilli(), value); err != nil {
			_ = app.Rollback()
			return fmt.Errorf("%s: storing %s: %w", name, series, err)
		}
	}
	return app.Commit()
}

type checker struct {
	engine *promql.Engine
	db     storage.Queryable
	at     time.Time
}

var labelValues = regexp.MustCompile(`^\s*label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// variables evaluates the query variables as Grafana would list their values, each as the
// regular expression Grafana puts in a query when all of them are selected.
func (c checker) variables(d dashboard) (map[string]string, error) {
	values := map[string]string{}
	hasDatasource := false
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			var query string
			hasDatasource = json.Unmarshal(v.Query, &query) == nil && query == "prometheus" && v.Name == "datasource"
		case "query":
			query := queryOf(v.Query)
			m := labelValues.FindStringSubmatch(substitute(query, values))
			if m == nil {
				return nil, fmt.Errorf("variable %q: %q is not label_values(SELECTOR, LABEL)", v.Name, query)
			}
			found, err := c.eval(fmt.Sprintf("group by (%s) (%s)", m[2], m[1]))
			if err != nil {
				return nil, fmt.Errorf("variable %q: %w", v.Name, err)
			}
			var alternatives []string
			for _, s := range found {
				if value := s.Metric.Get(m[2]); value != "" {
					alternatives = append(alternatives, regexp.QuoteMeta(value))
				}
			}
			if len(alternatives) == 0 {
				return nil, fmt.Errorf("variable %q: %s lists no value", v.Name, query)
			}
			// in a PromQL string literal a backslash is written twice
			values[v.Name] = strings.ReplaceAll("("+strings.Join(alternatives, "|")+")", `\`, `\\`)
		}
	}
	if !hasDatasource {
		return nil, errors.New(`the dashboard has no variable "datasource" of type datasource for prometheus`)
	}
	return values, nil
}

// queryOf is a query variable's query: a string, or in newer dashboards an object holding it.
func queryOf(raw json.RawMessage) string {
	var query string
	if json.Unmarshal(raw, &query) == nil {
		return query
	}
	var object struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(raw, &object)
	return object.Query
}

var reference = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)|\[\[(\w+)\]\]`)

// substitute puts the variables' values and Grafana's built-in intervals in a query; a
// reference to anything else stays, for the parser to reject.
func substitute(query string, values map[string]string) string {
	return reference.ReplaceAllStringFunc(query, func(ref string) string {
		m := reference.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		if v, ok := values[name]; ok {
			return v
		}
		if v, ok := builtins[name]; ok {
			return v
		}
		return ref
	})
}

// panel is what is wrong with one panel; nothing when it shows what it means to.
func (c checker) panel(p panel, values map[string]string) []string {
	var problems []string
	if p.Datasource == nil || p.Datasource.UID != datasourceUID {
		problems = append(problems, "its datasource is not "+datasourceUID)
	}
	if len(p.Targets) == 0 {
		problems = append(problems, "it has no query")
	}
	for _, t := range p.Targets {
		if t.Datasource != nil && t.Datasource.UID != datasourceUID {
			problems = append(problems, fmt.Sprintf("query %s: its datasource is not %s", t.RefID, datasourceUID))
		}
		for _, problem := range c.query(substitute(t.Expr, values)) {
			problems = append(problems, fmt.Sprintf("query %s: %s", t.RefID, problem))
		}
	}
	return problems
}

func (c checker) query(expr string) []string {
	parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("does not parse: %v\n    %s", err, expr)}
	}
	var problems []string
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			if found, err := c.eval(vs.String()); err != nil || len(found) == 0 {
				problems = append(problems, fmt.Sprintf("%s selects no series the driver serves", vs))
			}
		}
		return nil
	})
	found, err := c.eval(expr)
	switch {
	case err != nil:
		problems = append(problems, fmt.Sprintf("fails: %v\n    %s", err, expr))
	case len(found) == 0:
		problems = append(problems, fmt.Sprintf("returns no series\n    %s", expr))
	}
	return problems
}

// eval is an instant query's vector at the last scrape (a scalar as a vector of one).
func (c checker) eval(expr string) (promql.Vector, error) {
	q, err := c.engine.NewInstantQuery(context.Background(), c.db, nil, expr, c.at)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	result := q.Exec(context.Background())
	if result.Err != nil {
		return nil, result.Err
	}
	switch v := result.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		return promql.Vector{{T: v.T, F: v.V}}, nil
	default:
		return nil, fmt.Errorf("a panel's query must be an instant vector or scalar, not %s", result.Value.Type())
	}
}

// flatten is every panel that shows data, those of collapsed rows too.
func flatten(panels []panel) []panel {
	var all []panel
	for _, p := range panels {
		if p.Type == "row" {
			all = append(all, flatten(p.Panels)...)
			continue
		}
		all = append(all, p)
	}
	return all
}
