"""Running a distributed sweep: where it stands, cancelling and resuming it, recovering lost trials, the enrolled nodes."""
