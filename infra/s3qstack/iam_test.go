package s3qstack

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
)

// grant is one S3 action on one key prefix, as testdata/s3_access.json
// lists them per function.
type grant struct {
	Action string `json:"action"`
	Prefix string `json:"prefix"`
}

// accessFixture is written by the main module's shared/lambdafn
// TestS3AccessFixture from the requests the handlers make.
const accessFixture = "testdata/s3_access.json"

func toIfaces(ss []string) []interface{} {
	out := make([]interface{}, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// grantsOf reads the S3 grants of function fn's role back from the
// template: each object action on each <bucket>/<prefix>* or exact key,
// and ListBucket / ListBucketVersions on each s3:prefix of their
// condition. A ListBucket allowed only without a prefix (for 404s) lists
// nothing and is not a grant.
func (f *fixture) grantsOf(t *testing.T, fn string) []grant {
	t.Helper()
	arn := "<" + bucketID(f) + ".Arn>"
	seen := map[grant]bool{}
	for _, st := range f.statementsOf(t, fn) {
		if st["Effect"] != "Allow" {
			continue
		}
		for _, a := range list(st["Action"]) {
			action := a.(string)
			if !strings.HasPrefix(action, "s3:") {
				continue
			}
			if action == ListBucket || action == ListBucketVersions {
				if r := render(st["Resource"]); r != arn {
					t.Errorf("%s: %s on %s, want the bucket", fn, action, r)
				}
				cond, _ := st["Condition"].(map[string]interface{})
				for op, kv := range cond {
					if op == "Null" {
						continue
					}
					for _, p := range list(kv.(map[string]interface{})["s3:prefix"]) {
						seen[grant{action, strings.TrimSuffix(p.(string), "*")}] = true
					}
				}
				continue
			}
			for _, res := range list(st["Resource"]) {
				key, ok := strings.CutPrefix(render(res), arn+"/")
				if !ok {
					t.Errorf("%s: %s on %s, not a key of the bucket", fn, action, render(res))
					continue
				}
				seen[grant{action, strings.TrimSuffix(key, "*")}] = true
			}
		}
	}
	out := make([]grant, 0, len(seen))
	for g := range seen {
		out = append(out, g)
	}
	sortGrants(out)
	return out
}

func sortGrants(gs []grant) {
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].Prefix != gs[j].Prefix {
			return gs[i].Prefix < gs[j].Prefix
		}
		return gs[i].Action < gs[j].Action
	})
}

func TestIAM(t *testing.T) {
	all := envs(t)
	dev := all["dev"]

	t.Run("each_role_grants_exactly_the_s3_access_its_handlers_were_recorded_making", func(t *testing.T) {
		b, err := os.ReadFile(accessFixture)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string][]grant
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		for _, fn := range Functions() {
			if len(want[fn.Name]) == 0 {
				t.Errorf("%s has no recorded access in %s (run go test ./shared/lambdafn -run TestS3AccessFixture -update)", fn.Name, accessFixture)
				continue
			}
			// The recording runs with auto_declare on; the stack's default
			// is off, and then what only auto_declare does is not granted.
			want[fn.Name] = withoutAutoDeclare(fn, want[fn.Name])
			sortGrants(want[fn.Name])
			got := dev.grantsOf(t, fn.Name)
			in := func(gs []grant, g grant) bool {
				for _, x := range gs {
					if x == g {
						return true
					}
				}
				return false
			}
			for _, g := range got {
				if !in(want[fn.Name], g) {
					t.Errorf("%s is granted %s on %s, which its handlers never do", fn.Name, g.Action, g.Prefix)
				}
			}
			for _, g := range want[fn.Name] {
				if !in(got, g) {
					t.Errorf("%s does %s on %s, which its role does not grant", fn.Name, g.Action, g.Prefix)
				}
			}
		}
		for name := range want {
			found := false
			for _, fn := range Functions() {
				found = found || fn.Name == name
			}
			if !found {
				t.Errorf("%s has recorded access but no function in the stack", name)
			}
		}
	})

	t.Run("the_bucket_refuses_unconditional_puts_of_records", func(t *testing.T) {
		for env, f := range all {
			found := 0
			for _, pol := range f.resources("AWS::S3::BucketPolicy") {
				for _, s := range list(props(pol)["PolicyDocument"].(map[string]interface{})["Statement"]) {
					st := s.(map[string]interface{})
					if st["Sid"] != "RecordsOnlyByConditionalWrites" {
						continue
					}
					found++
					var res []string
					for _, r := range list(st["Resource"]) {
						res = append(res, strings.TrimPrefix(render(r), "<"+bucketID(f)+".Arn>/"))
					}
					sort.Strings(res)
					if st["Effect"] != "Deny" || render(st["Principal"]) != `{"AWS":"*"}` || render(st["Action"]) != "s3:PutObject" ||
						strings.Join(res, " ") != "q/*/dedup/* q/*/schedules/*.json q/*/tasks/*" ||
						render(st["Condition"]) != `{"Null":{"s3:if-match":"true","s3:if-none-match":"true"}}` {
						t.Errorf("%s: %s", env, render(st))
					}
				}
			}
			if found != 1 {
				t.Errorf("%s: %d conditional-write statements, want 1", env, found)
			}
		}
	})

	t.Run("iam5_is_suppressed_for_exactly_each_roles_own_prefixes", func(t *testing.T) {
		for _, fn := range Functions() {
			var wildcards []string
			for _, a := range fn.Access {
				if a.AutoDeclare {
					continue // not granted by default
				}
				object := false
				for _, act := range a.Actions {
					object = object || !bucketActions[act]
				}
				switch {
				case object && strings.HasSuffix(a.Prefix, "/"):
					wildcards = append(wildcards, IAM5Finding(bucketID(dev), a.Prefix+"*"))
				case object && strings.Contains(a.Prefix, "*"): // q/*/queue.json
					wildcards = append(wildcards, IAM5Finding(bucketID(dev), a.Prefix))
				}
			}
			sort.Strings(wildcards)
			fnRes := dev.resources("AWS::Lambda::Function")[dev.functionID(t, fn.Name)]
			roleID := props(fnRes)["Role"].(map[string]interface{})["Fn::GetAtt"].([]interface{})[0].(string)
			var applies []string
			for id, r := range dev.json["Resources"].(map[string]interface{}) {
				if id != roleID && !strings.HasPrefix(id, roleID[:len(roleID)-8]+"DefaultPolicy") {
					continue
				}
				md, _ := r.(map[string]interface{})["Metadata"].(map[string]interface{})
				nag, _ := md["cdk_nag"].(map[string]interface{})
				for _, s := range list(nag["rules_to_suppress"]) {
					if sup, _ := s.(map[string]interface{}); sup != nil && sup["id"] == "AwsSolutions-IAM5" {
						for _, a := range list(sup["applies_to"]) {
							str, ok := a.(string)
							if !ok {
								t.Errorf("%s: IAM5 applies to %v, a pattern, not one resource", fn.Name, render(a))
								continue
							}
							if strings.HasSuffix(str, ".Arn>/*") {
								t.Errorf("%s: IAM5 suppressed for the whole bucket: %s", fn.Name, str)
							}
							applies = append(applies, str)
						}
					}
				}
			}
			sort.Strings(applies)
			applies = dedup(applies)
			if strings.Join(applies, " ") != strings.Join(wildcards, " ") {
				t.Errorf("%s: IAM5 suppressed for\n  %v\nwant exactly its prefixes\n  %v", fn.Name, applies, wildcards)
			}
		}
	})

	t.Run("only_the_sweeps_and_the_tasks_roles_may_put_events_on_the_bus", func(t *testing.T) {
		pols := dev.resources("AWS::Events::EventBusPolicy")
		if len(pols) != 1 {
			t.Fatalf("%d event bus policies, want 1", len(pols))
		}
		sweepRole := props(dev.resources("AWS::Lambda::Function")[dev.functionID(t, "sweep-expired")])["Role"]
		tasksRole := props(dev.resources("AWS::Lambda::Function")[dev.functionID(t, "tasks")])["Role"]
		for _, pol := range pols {
			st := props(pol)["Statement"].(map[string]interface{})
			if got := render(props(pol)["EventBusName"]); got != "<"+busID(dev)+">" {
				t.Errorf("policy on bus %s", got)
			}
			cond := st["Condition"].(map[string]interface{})["ArnNotEquals"].(map[string]interface{})["aws:PrincipalArn"]
			if st["Effect"] != "Deny" || render(st["Principal"]) != `{"AWS":"*"}` || st["Action"] != "events:PutEvents" ||
				render(st["Resource"]) != "<"+busID(dev)+".Arn>" || len(list(cond)) != 2 ||
				render(list(cond)[0])+render(list(cond)[1]) != render(tasksRole)+render(sweepRole) {
				t.Errorf("bus policy statement %s; want a Deny of PutEvents to all but %s and %s", render(st), render(tasksRole), render(sweepRole))
			}
		}
	})
}

// withoutAutoDeclare drops from gs the grants fn's table marks as used
// only under autoDeclare.
func withoutAutoDeclare(fn Function, gs []grant) []grant {
	only := map[grant]bool{}
	for _, a := range fn.Access {
		if a.AutoDeclare {
			for _, act := range a.Actions {
				only[grant{act, a.Prefix}] = true
			}
		}
	}
	var out []grant
	for _, g := range gs {
		if !only[g] {
			out = append(out, g)
		}
	}
	return out
}

func dedup(ss []string) []string {
	var out []string
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func TestLoadIsolationSettingsAreChecked(t *testing.T) {
	for name, c := range map[string]struct {
		change func(*Settings)
		want   string
	}{
		"a_wait_as_long_as_the_function_timeout": {func(s *Settings) { s.MaxWaitSeconds = s.APITimeoutSeconds }, "maxWaitSeconds"},
		"no_wait":                                {func(s *Settings) { s.MaxWaitSeconds = 0 }, "maxWaitSeconds"},
		"a_negative_reservation":                 {func(s *Settings) { s.SweepReservedConcurrency = -1 }, "sweepReservedConcurrency"},
		"a_claim_throttle_of_zero":               {func(s *Settings) { s.ClaimThrottleRate = 0 }, "claimThrottleRate"},
		"a_batch_burst_of_zero":                  {func(s *Settings) { s.BatchThrottleBurst = 0 }, "batchThrottleBurst"},
		"waits_without_reserved_concurrency":     {func(s *Settings) { s.WaitsReservedConcurrency = 0 }, "waitsReservedConcurrency"},
		"a_wait_throttle_of_zero":                {func(s *Settings) { s.WaitThrottleRate = 0 }, "waitThrottleRate"},
	} {
		t.Run(name, func(t *testing.T) {
			s := DefaultSettings("dev")
			c.change(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want an error naming %s", err, c.want)
			}
		})
	}
	t.Run("no_reservation_is_allowed", func(t *testing.T) {
		s := DefaultSettings("dev")
		s.SweepReservedConcurrency, s.TickReservedConcurrency = 0, 0
		if err := s.Validate(); err != nil || s.reservedConcurrency("sweep-expired") != 0 {
			t.Errorf("%v", err)
		}
	})
}
