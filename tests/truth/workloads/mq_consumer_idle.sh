#!/bin/bash
# expect: idle
# settle: hold+15
# stay: 30
# why: a message-queue consumer on an idle queue: subscribed, heartbeats each way every 5 s, no message
# debatable: a box asleep gets no message; but a queue with none is no work (the broker wakes nothing either way)
. "$TRUTH_TOOLS/lib.sh"
exec $NET consumer
