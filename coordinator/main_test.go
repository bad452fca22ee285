package coordinator

import (
	"testing"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
