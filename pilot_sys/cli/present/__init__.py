"""Terminal rendering: what `pilot-sys` prints, from the models the other layers return.

One module per thing shown: ``progress`` (a session's live lines), ``summary`` (the end of a
run), ``comparison`` (rankings and saved-result comparisons), ``monitor`` (the verdict and the
live utilization table). Every number goes through ``pilot_sys.units``. Functions named
``*_lines`` return text and print nothing, so tests read exactly what a person sees.
"""
