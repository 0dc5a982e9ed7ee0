package s3qstack

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/metrics/catalog"
)

// widgetMetric is one series of a dashboard widget as CloudWatch reads it.
type widgetMetric struct {
	widget     string
	namespace  string
	name       string
	dims       map[string]string
	expression string
}

// dashboardMetrics reads the dashboard of an environment from its template
// (the body with its references rendered as <Ref>) and returns every
// series of every widget.
func dashboardMetrics(t *testing.T, f *fixture) ([]widgetMetric, []string) {
	t.Helper()
	dashes := f.resources("AWS::CloudWatch::Dashboard")
	if len(dashes) != 1 {
		t.Fatalf("%d dashboards, want 1", len(dashes))
	}
	var body string
	for _, d := range dashes {
		if props(d)["DashboardName"] != DashboardName(strings.TrimPrefix(*f.stack.Node().Id(), "s3q-")) {
			t.Errorf("dashboard name %v", props(d)["DashboardName"])
		}
		body = render(props(d)["DashboardBody"])
	}
	var dash struct {
		Widgets []struct {
			Type       string
			Properties struct {
				Title   string
				Metrics [][]interface{}
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &dash); err != nil {
		t.Fatalf("the dashboard body is not JSON: %v\n%s", err, body)
	}
	var out []widgetMetric
	var titles []string
	for _, w := range dash.Widgets {
		if w.Type != "metric" {
			continue
		}
		titles = append(titles, w.Properties.Title)
		if len(w.Properties.Metrics) == 0 {
			t.Errorf("widget %q shows nothing", w.Properties.Title)
		}
		for _, m := range w.Properties.Metrics {
			wm := widgetMetric{widget: w.Properties.Title, dims: map[string]string{}}
			var strs []string
			for _, v := range m {
				switch x := v.(type) {
				case string:
					strs = append(strs, x)
				case map[string]interface{}:
					if e, ok := x["expression"].(string); ok {
						wm.expression = e
					}
				}
			}
			if wm.expression == "" {
				if len(strs) < 2 || len(strs)%2 != 0 {
					t.Errorf("widget %q: series %v", w.Properties.Title, m)
					continue
				}
				wm.namespace, wm.name = strs[0], strs[1]
				for i := 2; i+1 < len(strs); i += 2 {
					wm.dims[strs[i]] = strs[i+1]
				}
			}
			out = append(out, wm)
		}
	}
	return out, titles
}

var searchExpr = regexp.MustCompile(`^SEARCH\('\{([^}]*)\} MetricName="([^"]+)"', '[A-Za-z0-9]+', [0-9]+\)$`)

func TestTheDashboard(t *testing.T) {
	for env, f := range envs(t) {
		t.Run(env, func(t *testing.T) {
			series, titles := dashboardMetrics(t, f)
			ns := MetricNamespace(env)
			shown := map[string]bool{}
			lambda := map[string][]string{} // metric -> functions
			api := map[string]bool{}
			for _, s := range series {
				switch {
				case s.expression != "" && strings.HasPrefix(s.expression, "SEARCH("):
					m := searchExpr.FindStringSubmatch(s.expression)
					if m == nil {
						t.Errorf("%q: search %s is not of the form the test reads", s.widget, s.expression)
						continue
					}
					c, ok := catalog.Lookup(m[2])
					schema := strings.Split(m[1], ",")
					if !ok {
						t.Errorf("%q searches %s, which is not in the metrics catalog", s.widget, m[2])
					} else if schema[0] != ns || !slices.Equal(schema[1:], c.Dimensions) {
						t.Errorf("%q searches %s in {%s}; the catalog has it in %s by %v", s.widget, m[2], m[1], ns, c.Dimensions)
					}
					shown[m[2]] = true
				case s.expression != "":
					// metric math over series listed (hidden) in the same widget
				case s.namespace == ns:
					c, ok := catalog.Lookup(s.name)
					if !ok {
						t.Errorf("%q shows %s, which is not in the metrics catalog", s.widget, s.name)
						continue
					}
					var keys []string
					for k := range s.dims {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					if !(slices.Equal(keys, c.Dimensions) || (len(keys) == 0 && c.Filtered)) {
						t.Errorf("%q shows %s by %v; the catalog writes it by %v (filtered copy without dimensions: %v)", s.widget, s.name, keys, c.Dimensions, c.Filtered)
					}
					if s.dims["service"] != "" && s.dims["service"] != "s3q" {
						t.Errorf("%q: service %q", s.widget, s.dims["service"])
					}
					shown[s.name] = true
				case s.namespace == "AWS/Lambda":
					lambda[s.name] = append(lambda[s.name], s.dims["FunctionName"])
				case s.namespace == "AWS/ApiGateway":
					if !strings.HasPrefix(s.dims["ApiId"], "<Api") {
						t.Errorf("%q: API metric %s of %v, want the stack's API", s.widget, s.name, s.dims)
					}
					api[s.name] = true
				default:
					t.Errorf("%q shows %s/%s, from no namespace the stack writes or AWS's Lambda and API Gateway", s.widget, s.namespace, s.name)
				}
			}
			for _, want := range []string{
				catalog.QueueDepth, catalog.OldestPendingAgeSeconds,
				catalog.TasksSubmittedTotal, catalog.TasksCompletedTotal, catalog.TasksFailedTotal, catalog.TasksExpired, catalog.TasksDeadLetteredTotal,
				catalog.PushDeliveriesTotal, catalog.PushDeliveryFailuresTotal,
				catalog.SweepDuration, catalog.SweepIncomplete, catalog.S3RequestsTotal,
			} {
				if !shown[want] {
					t.Errorf("the dashboard does not show %s", want)
				}
			}
			var fnIDs []string
			for _, fn := range Functions() {
				fnIDs = append(fnIDs, "<"+f.functionID(t, fn.Name)+">")
			}
			sort.Strings(fnIDs)
			for _, m := range []string{"Errors", "Throttles", "ConcurrentExecutions"} {
				got := append([]string(nil), lambda[m]...)
				sort.Strings(got)
				if !slices.Equal(got, fnIDs) {
					t.Errorf("Lambda %s for %v, want every function %v", m, got, fnIDs)
				}
			}
			for _, m := range []string{"4xx", "5xx", "Latency"} {
				if !api[m] {
					t.Errorf("the dashboard has no API %s", m)
				}
			}
			if len(titles) < 8 {
				t.Errorf("%d graphs: %v", len(titles), titles)
			}
		})
	}
}

// The alarms watch catalog metrics too.
func TestTheAlarmsWatchCatalogMetrics(t *testing.T) {
	f := envs(t)["dev"]
	for id, a := range f.resources("AWS::CloudWatch::Alarm") {
		p := props(a)
		if p["Namespace"] != MetricNamespace("dev") {
			continue
		}
		if _, ok := catalog.Lookup(p["MetricName"].(string)); !ok {
			t.Errorf("alarm %s watches %v, which is not in the metrics catalog", id, p["MetricName"])
		}
	}
	for id, mf := range f.resources("AWS::Logs::MetricFilter") {
		for _, tr := range props(mf)["MetricTransformations"].([]interface{}) {
			name := tr.(map[string]interface{})["MetricName"].(string)
			if c, ok := catalog.Lookup(name); !ok || !c.Filtered {
				t.Errorf("metric filter %s makes %s: not in the catalog as a filtered metric", id, name)
			}
		}
	}
}
