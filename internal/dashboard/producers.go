package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/internal/names"
)

// maxConnectionRows bounds the connections one answer lists: a broker's list is network input.
const maxConnectionRows = 1024

type producersBody struct {
	Group       string   `json:"group"`
	Topic       string   `json:"topic"`
	Connections []member `json:"connections"`
	Truncated   bool     `json:"truncated"`
}

// producers serves GET /api/producers?group=&topic=: the connections of a producer group, as
// RocketMQ's dashboard and mqadmin producerConnection ask (GET_PRODUCER_CONNECTION_LIST to the
// masters of a topic the group sends to: brokers know producers by group, not by topic, and
// list no groups).
func (s *Server) producers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	group, topic := strings.TrimSpace(q.Get("group")), strings.TrimSpace(q.Get("topic"))
	if err := names.CheckGroup(group); err != nil {
		writeError(w, http.StatusBadRequest, "group: "+err.Error())
		return
	}
	if err := names.CheckTopic(topic); err != nil {
		writeError(w, http.StatusBadRequest, "topic (one the group sends to): "+err.Error())
		return
	}
	conns, err := s.src.ProducerConnection(r.Context(), group, topic)
	switch {
	case errors.Is(err, admin.ErrNoConnection):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no producer of group %s is connected to a master of topic %s", group, topic))
		return
	case isTopicNotExist(err):
		writeError(w, http.StatusNotFound, "topic "+topic+" does not exist")
		return
	case err != nil:
		s.upstream(w, r, err)
		return
	}
	body := producersBody{Group: group, Topic: topic, Connections: make([]member, 0, min(len(conns), maxConnectionRows))}
	for _, c := range conns {
		if len(body.Connections) == maxConnectionRows {
			body.Truncated = true
			break
		}
		body.Connections = append(body.Connections, member{ClientID: truncate(c.ClientID, 256),
			ClientAddr: truncate(c.ClientAddr, maxAddrBytes), Language: truncate(c.Language, 32), Version: c.Version})
	}
	writeJSON(w, http.StatusOK, body)
}
