package broker

// RemoveGroup drops a group's committed offsets of every topic, as DELETE_SUBSCRIPTIONGROUP
// with removeOffset does, and returns how many topics it had offsets in.
func (v Offsets) RemoveGroup(group string) int { return v.b.offsets.RemoveGroup(group) }
