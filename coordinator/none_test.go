package coordinator

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/persistence"
)

// None gives the runner every account at Start and follows the account
// list through the listener (the trigger of migration 4 notifies it on
// every create and delete), runs its chores while started, and shows
// itself as leader and only member.
func TestNoneFollowsTheAccountList(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := persistence.NewDB(pgtest.NewPool(t), nil)
	w, err := db.CreateWIM(ctx, wimro.WIM{Name: "wim0", Type: "fake", URL: "http://wim0.example"})
	if err != nil {
		t.Fatal(err)
	}
	create := func(name string) string {
		t.Helper()
		a, err := db.CreateAccount(ctx, wimro.WIMAccount{Name: &name, WIMID: w.UUID})
		if err != nil {
			t.Fatal(err)
		}
		return a.UUID
	}
	first := create("a0")

	l := persistence.NewListener(db, nil)
	list := l.Subscribe(persistence.ChannelAccountList)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Stop(context.Background()) })
	runner, chore := &recorder{}, &testChore{}
	n := NewNone(NoneConfig{DB: db, AccountList: list, Runner: runner, Chores: []Chore{chore}, InstanceID: "me", Address: "127.0.0.1:9090"})
	n.signals.Init()
	if n.Ready() {
		t.Fatal("ready before Start")
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := runner.current(); !slices.Equal(got, []string{first}) || !n.Ready() || !chore.running.Load() {
		t.Fatalf("after Start: runner %v, ready %v, chore running %v", got, n.Ready(), chore.running.Load())
	}

	second := create("a1")
	want := []string{first, second}
	slices.Sort(want)
	n.signals.Assigned.WaitFor(t, 10*time.Second, "the new account handed to the runner", func(ids []string) bool { return slices.Equal(ids, want) })
	if got, _ := runner.current(); !slices.Equal(got, want) {
		t.Fatalf("runner has %v, want %v", got, want)
	}
	if _, err := db.Pool().Exec(ctx, `DELETE FROM wim_accounts WHERE uuid = $1`, first); err != nil {
		t.Fatal(err)
	}
	n.signals.Assigned.WaitFor(t, 10*time.Second, "the deleted account taken away", func(ids []string) bool { return slices.Equal(ids, []string{second}) })
	if got, _ := runner.current(); !slices.Equal(got, []string{second}) {
		t.Fatalf("runner has %v, want %v", got, []string{second})
	}

	st, err := n.Status(ctx)
	if err != nil || st.Coordinator != "none" || st.Leader != "me" || len(st.Members) != 1 || st.Members[0].Address != "127.0.0.1:9090" ||
		!slices.Equal(st.Assignments["me"], []string{second}) {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if chore.running.Load() {
		t.Fatal("chore still running after Stop")
	}
}
