# runner/cpu/ — the CPU backend, orun's reference (issue [engine]).
