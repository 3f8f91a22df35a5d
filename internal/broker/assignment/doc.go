// Package assignment is RocketMQ 5's server-side assignment of queues, a service of the broker
// core (QueryAssignmentProcessor with its MessageRequestModeManager): QUERY_ASSIGNMENT (400)
// tells a consumer which queues of a topic are its own and how to read them, PULL or POP;
// SET_MESSAGE_REQUEST_MODE (401) sets that mode for a group and topic, and
// GET_ALL_MESSAGE_REQUEST_MODE (402) lists the modes set (a slave's sync reads it).
//
// The modes set are kept in <store>/config/messageRequestMode.json, written before
// SET_MESSAGE_REQUEST_MODE is answered, as RocketMQ persists it, and a slave takes its master's
// through internal/broker/ha's metadata sync (InstallMaster); a group and topic nobody set
// one for read with Types.DefaultMessageRequestMode (PULL), a retry topic always PULL.
//
// The queues of a topic are those its route names, readable, on every broker of the cluster,
// as 5.x's TopicRouteInfoManager has them from the name servers: the route is fetched when a
// query needs it and kept DefaultRoutePollInterval (loadBalancePollNameServerInterval); a
// broker without name servers assigns its own queues. In PULL mode the group's members, as
// their heartbeats registered them, share the queues by the client's strategy (AVG or
// AVG_BY_CIRCLE, the two 5.x serves); in POP mode every member pops every queue (queue id
// -1: all of a broker's queues) unless popShareQueueNum is set, when each member also pops
// the queues of that many members after it.
//
// Bodies are checked before anything is read from them: the names they carry
// (internal/names), the mode and the message model; a body larger than maxBodyBytes is
// refused by the dispatcher as it arrives (Handler.MaxBody), never buffered whole. The mode table holds at most maxRequestModes entries. The service's lock, the
// mode table's and the route cache's mutexes, are leaves.
package assignment
