package httpapi

import (
	"fmt"
	"net/http"
	"os"

	"github.com/lshdb/lshdb/db"
)

// WaitingHandler is the handler of an address whose server waits for its
// index, which another process holds (lshdb serve, started while a
// command holds the index, waits for it to end). Every request is
// answered 503 with Retry-After, its connection then closed: GET
// /healthz with the status "waiting", every other request with the
// error code "locked" (db.ErrLocked, which lshdb's commands report as a
// busy index, exit 75). holder names what is waited for ("lshdb insert
// (pid 4242)"); over TCP, with a token set (Options.Token), it and the
// pid are told only to a request that carries one.
//
// NB: the address refused connections while serve waited, for as long as
// a nightly command held the index, and a TCP liveness probe took the
// server for dead; it answers now, as not ready.
func WaitingHandler(opts *Options, holder func() string) http.Handler {
	h := &handler{}
	if opts != nil {
		h.o = *opts
	}
	h.setTokens()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &resp{w: w, rc: http.NewResponseController(w), h: h, id: requestID(r), r: r}
		// NB: as every answer of the API (it had none: a review of the
		// API from a client's side, AC3).
		w.Header().Set("X-Request-Id", rw.id)
		// NB: its body unread, the connection closed: a client's next
		// request opens a new one, which the index's server takes once
		// it serves.
		rw.refuseUnread()
		w.Header().Set("Retry-After", "5")
		told := h.o.Token == "" || !overTCP(r) || h.authorized(r) == nil
		msg := "the server waits for the process that holds the index to end; it serves the index once it has"
		if told {
			msg = fmt.Sprintf("the server waits for %s, which holds the index, to end (it serves the index on its socket meanwhile); it serves the index here once it has", holder())
		}
		if r.URL.Path == "/healthz" {
			if !told {
				_ = rw.json(http.StatusServiceUnavailable, struct {
					Status string `json:"status"`
				}{"waiting"})
				return
			}
			// NB: HealthJSON without its count of documents, which
			// would read 0.
			_ = rw.json(http.StatusServiceUnavailable, struct {
				Status string `json:"status"`
				Error  string `json:"error"`
				PID    int    `json:"pid"`
				Owner  string `json:"owner,omitempty"`
			}{"waiting", msg, os.Getpid(), h.o.Owner})
			return
		}
		// NB: 503, where the table gives "locked" 409: a load balancer
		// and a client retry a 503; the code tells a program why.
		err := fmt.Errorf("%w: %s", db.ErrLocked, msg)
		_ = rw.json(http.StatusServiceUnavailable, ErrorJSON{Error: errorBody(err, codeOf(err))})
	})
}
