// Package schedule is s3q's recurring-schedule core: cron schedules stored
// in the bucket and the tick that fires them into the queue, exactly once
// per cron time, however many ticks run at once and wherever one dies.
//
// # Layout
//
//	schedules/{id}.json          the definition (Definition): task template, cron, timezone, policies
//	schedules/{id}/state.json    run state (State): last_run_at, last_task_id, next_run_at; changed only by CAS
//	schedules/{id}/history/{t}   one entry per fire (Fire)
//	due/{t}_{id}_{rev}           empty marker: the tick looks at schedule id at or after t
//
// The due/ index is the layout's one idea: a fixed-width UTC time
// first, so a LIST from the start of due/ that stops at the first future
// key finds what is due at a cost that grows with the due schedules, not
// the stored ones. An idle tick is one LIST.
//
// # Exactly once per cron time
//
// The task of the fire of schedule id at time t has the id
// queue.DerivedID(t, "schedule/"+id) (see TaskID) and is created
// create-only: a repeated or racing fire finds it. The state moves past t
// (compare-and-swap) only after the task exists, so a fire is never lost;
// the due marker of the next time is written before that and the old one
// deleted after. Markers are hints: the tick checks the state, and a
// marker the state does not name is deleted as stale.
//
// # Cron expressions and time zones
//
// Expressions are read by github.com/robfig/cron/v3: five fields (minute,
// hour, day of month, month, day of week; names like MON and JAN work;
// when both day fields are restricted either may match), or a descriptor:
// @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly,
// and @every <duration>. There is no seconds field. The time zone is an
// IANA name (default UTC); the tz database is compiled in (time/tzdata),
// so zones work on hosts without one, such as Lambda's provided.al2023.
// "TZ=" and "CRON_TZ=" prefixes are refused: give the zone in timezone.
// An expression that never fires (0 0 30 2 *) is refused.
//
// @every d fires at the whole multiples of d since 1970-01-01T00:00:00Z,
// whatever the time zone and whenever the schedule was created: @every 15m
// fires at :00, :15, :30 and :45, @every 90s at 00:00:00, 00:01:30,
// 00:03:00, ... UTC. d is a whole number of seconds from 1m to 366d ("7d"
// works).
//
// Daylight-saving time. Expressions are matched against the wall clock of
// the time zone:
//
//   - A wall-clock time that does not exist (spring forward) is skipped:
//     with Europe/Berlin, "30 2 * * *" does not fire on the last Sunday of
//     March (02:00 jumps to 03:00) and fires at 02:30 again the next day;
//     "0 0 * * *" does not fire on a day that has no midnight. Schedules
//     over every hour keep their real spacing: "*/30 * * * *" goes 01:30
//     CET, 03:00 CEST, 30 minutes apart.
//   - A wall-clock time that happens twice (fall back) fires once, at its
//     first occurrence, when the hour field names hours: with
//     America/New_York, "30 1 * * *" fires at 01:30 EDT on the first
//     Sunday of November and not again at 01:30 EST, an hour later.
//     When the hour field is "*" (every hour: "*/15 * * * *",
//     "0 * * * *", @hourly) the schedule is about elapsed time and fires
//     in both occurrences: 01:00, 01:15, ... 01:45 EDT, then 01:00, ...
//     01:45 EST, every 15 real minutes.
//
// This is robfig/cron's behaviour, except that robfig fires a repeated
// time twice whatever the hour field; like cron(8) and EventBridge
// Scheduler, a fixed-time schedule here runs once.
// Zones whose clocks move by 30 minutes (Australia/Lord_Howe) are not
// handled correctly by robfig/cron: there "0 0 * * *" skips 2026-04-06
// and "30 1 * * *" fires twice on 2026-10-04 (01:30 and 02:30).
//
// # Missed runs, overlap, catch-up
//
// A tick that finds fire times passed since the schedule's next_run_at
// (an outage, or a tick that stopped at its budget) fires, with
// missed_runs=skip (the default), only the latest of them; with
// missed_runs=catch_up, each one within catch_up_window (default 24h) of
// now, oldest first, at most Options.MaxCatchUpPerTick per tick and as
// many as the tick's budget allows (the next ticks carry on), and always
// at least the latest. With overlap=skip a fire is not made while the
// last fired task (last_task_id, or the task of next_run_at made by a
// tick that died before its state write) is pending or running; the time
// is recorded in the history as skipped. A task's ttl
// counts from its fire time (ttl_from=submission), so a late fire gets
// what is left and one later than its ttl is created already expired.
//
// Paused schedules fire nothing and have no due marker; resume fires from
// the first cron time after the resume (times passed while paused are not
// caught up). Update keeps the next fire time when the expression and time
// zone are unchanged, and otherwise starts from the first new cron time
// after the update.
//
// Every call takes now; the core reads no clock except to measure a
// tick's wall-clock budget.
package schedule
