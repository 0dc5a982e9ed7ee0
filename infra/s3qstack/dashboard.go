package s3qstack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/s3q/s3q/shared/metrics/catalog"
)

// DashboardName is the name of an environment's CloudWatch dashboard.
func DashboardName(env string) string { return "s3q-" + env }

// dashboard builds the environment's CloudWatch dashboard, s3q-<env>:
//
//   - queue depth and the age of the oldest pending task, by queue
//     (queue_depth, oldest_pending_age_seconds: sweep-expired writes them
//     every 5 minutes);
//   - tasks submitted, completed, failed, expired and dead-lettered per
//     minute; push deliveries and failures per minute, by queue;
//   - sweep duration and SweepIncomplete; S3 requests per minute and per
//     task submitted;
//   - Lambda errors, throttles and concurrency per function;
//   - the API's 4xx and 5xx per minute and its latency.
//
// Every s3q metric it shows is named from package catalog (s3qMetric
// refuses any other), the list the functions' emitters take their names
// from.
func (b *builder) dashboard() {
	ns := MetricNamespace(b.env)
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	five := awscdk.Duration_Minutes(jsii.Number(5))
	service := map[string]*string{"service": jsii.String("s3q")}
	// byQueue is every queue's series of a metric with the dimensions
	// service and queue: a SEARCH, since queues are data, not stack.
	byQueue := func(name, stat string, period awscdk.Duration, label string) awscloudwatch.IMetric {
		m := mustCatalog(name)
		if len(m.Dimensions) != 2 || m.Dimensions[1] != "queue" {
			panic(fmt.Sprintf("s3qstack: %s is not a metric by queue", name))
		}
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,service,queue} MetricName="%s"', '%s', %d)`,
				ns, name, stat, int(*period.ToSeconds(nil)))),
			Label:  jsii.String(label),
			Period: period,
		})
	}
	s3q := func(name, stat string, period awscdk.Duration, label string) awscloudwatch.IMetric {
		m := mustCatalog(name)
		props := &awscloudwatch.MetricProps{
			Namespace: jsii.String(ns), MetricName: jsii.String(name),
			Statistic: jsii.String(stat), Period: period, Label: jsii.String(label),
		}
		switch {
		case len(m.Dimensions) == 1 && m.Dimensions[0] == "service":
			props.DimensionsMap = &service
		case m.Filtered:
			// The stack's metric filter's copy, without dimensions.
		default:
			panic(fmt.Sprintf("s3qstack: %s has dimensions %v; show it by queue or add its copy without them", name, m.Dimensions))
		}
		return awscloudwatch.NewMetric(props)
	}
	graph := func(title string, width float64, left []awscloudwatch.IMetric, right []awscloudwatch.IMetric) awscloudwatch.IWidget {
		p := &awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Width: jsii.Number(width), Height: jsii.Number(6),
			Left: &left, LiveData: jsii.Bool(true),
		}
		if len(right) > 0 {
			p.Right = &right
		}
		return awscloudwatch.NewGraphWidget(p)
	}
	perFunction := func(metric func(name string) awscloudwatch.IMetric) []awscloudwatch.IMetric {
		var out []awscloudwatch.IMetric
		for _, fn := range Functions() {
			out = append(out, metric(fn.Name))
		}
		return out
	}
	fnOpts := func(stat string, name string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Period: minute, Label: jsii.String(name)}
	}

	subs := s3q(catalog.TasksSubmittedTotal, "Sum", five, "submitted")
	reqs := s3q(catalog.S3RequestsTotal, "Sum", five, "S3 requests")
	perTask := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("s3 / submitted"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"s3": reqs, "submitted": subs},
		Label:        jsii.String("S3 requests per task submitted"),
		Period:       five,
	})

	rows := [][]awscloudwatch.IWidget{
		{awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
			Width: jsii.Number(24), Height: jsii.Number(2),
			Markdown: jsii.String("## s3q " + b.env + "\n" +
				"Queue gauges come from sweep-expired every 5 minutes. Watch: depth and oldest pending age growing " +
				"(workers too few or down), dead-lettered or push failures above 0, SweepIncomplete at 1 " +
				"(expiries and reclaims late), Lambda throttles and errors, API 5xx."),
		})},
		{
			graph("Queue depth (live tasks, by queue)", 12, []awscloudwatch.IMetric{byQueue(catalog.QueueDepth, "Maximum", five, "")}, nil),
			graph("Oldest pending task age (seconds, by queue)", 12, []awscloudwatch.IMetric{byQueue(catalog.OldestPendingAgeSeconds, "Maximum", five, "")}, nil),
		},
		{
			graph("Tasks per minute", 12, []awscloudwatch.IMetric{
				s3q(catalog.TasksSubmittedTotal, "Sum", minute, "submitted"),
				s3q(catalog.TasksCompletedTotal, "Sum", minute, "completed"),
				s3q(catalog.TasksFailedTotal, "Sum", minute, "failed attempts"),
				s3q(catalog.TasksExpired, "Sum", minute, "expired"),
				s3q(catalog.TasksDeadLetteredTotal, "Sum", minute, "dead-lettered"),
			}, nil),
			graph("Push deliveries and failures per minute (by queue)", 12, []awscloudwatch.IMetric{
				byQueue(catalog.PushDeliveriesTotal, "Sum", minute, "delivered"),
				byQueue(catalog.PushDeliveryFailuresTotal, "Sum", minute, "failed"),
			}, nil),
		},
		{
			graph("Sweep: duration (ms, left) and SweepIncomplete (right)", 12,
				[]awscloudwatch.IMetric{s3q(catalog.SweepDuration, "Maximum", minute, "sweep duration")},
				[]awscloudwatch.IMetric{s3q(catalog.SweepIncomplete, "Maximum", minute, "SweepIncomplete")}),
			graph("S3 requests per 5 minutes (left) and per task submitted (right)", 12,
				[]awscloudwatch.IMetric{reqs}, []awscloudwatch.IMetric{perTask}),
		},
		{
			graph("Lambda errors per minute", 8, perFunction(func(n string) awscloudwatch.IMetric {
				return b.out.Functions[n].MetricErrors(fnOpts("Sum", n))
			}), nil),
			graph("Lambda throttles per minute", 8, perFunction(func(n string) awscloudwatch.IMetric {
				return b.out.Functions[n].MetricThrottles(fnOpts("Sum", n))
			}), nil),
			graph("Lambda concurrent executions (max)", 8, perFunction(func(n string) awscloudwatch.IMetric {
				return b.out.Functions[n].Metric(jsii.String("ConcurrentExecutions"), fnOpts("Maximum", n))
			}), nil),
		},
		{
			graph("API 4xx and 5xx per minute", 12, []awscloudwatch.IMetric{
				b.out.Api.MetricClientError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute, Label: jsii.String("4xx")}),
				b.out.Api.MetricServerError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute, Label: jsii.String("5xx")}),
			}, nil),
			graph("API latency (ms)", 12, []awscloudwatch.IMetric{
				b.out.Api.MetricLatency(&awscloudwatch.MetricOptions{Statistic: jsii.String("p50"), Period: minute, Label: jsii.String("p50")}),
				b.out.Api.MetricLatency(&awscloudwatch.MetricOptions{Statistic: jsii.String("p99"), Period: minute, Label: jsii.String("p99")}),
			}, nil),
		},
	}
	var widgets []*[]awscloudwatch.IWidget
	for i := range rows {
		widgets = append(widgets, &rows[i])
	}
	b.out.Dashboard = awscloudwatch.NewDashboard(b.stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   jsii.String(DashboardName(b.env)),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
		Widgets:         &widgets,
	})
}

// mustCatalog returns the catalog's metric name; a name that is not in it
// is a bug of the stack.
func mustCatalog(name string) catalog.Metric {
	m, ok := catalog.Lookup(name)
	if !ok {
		panic(fmt.Sprintf("s3qstack: metric %s is not in shared/metrics/catalog", name))
	}
	return m
}
