#!/bin/bash
# expect: idle
# settle: hold+15
# stay: 45
# why: an event listener long-polling (15 s, keep-alive) a service that never has an event (a CI runner, a webhook relay)
# debatable: asleep, it hears no event; its first poll counts once, later ones are a listener's heartbeat
. "$TRUTH_TOOLS/lib.sh"
exec $NET long-poll --wait 15
