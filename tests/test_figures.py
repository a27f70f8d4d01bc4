"""Idle episodes joined across hours, with where each one began (one alert per episode)."""
from apps.recommendations.episodes import Episode, IdleHour, idle_episodes, long_episodes

T0 = 1_700_000_000 - (1_700_000_000 % 3600)
H = 3600


def test_a_stretch_across_three_hours_starts_in_the_first():
    hours = [
        IdleHour(T0, 0, 1200, 1200, False),           # idle from minute 40
        IdleHour(T0 + H, 3600, 3600, 3600, True),     # idle throughout
        IdleHour(T0 + 2 * H, 600, 0, 600, False),     # idle for the first 10 minutes
    ]
    assert idle_episodes(hours) == [Episode(T0 + 2400, 1200 + 3600 + 600, False)]


def test_a_stretch_reaching_the_last_hour_is_open():
    hours = [IdleHour(T0, 0, 900, 900, False)]
    assert idle_episodes(hours) == [Episode(T0 + 2700, 900, True)]
    hours = [IdleHour(T0, 3600, 3600, 3600, True), IdleHour(T0 + H, 3600, 3600, 3600, True)]
    assert idle_episodes(hours) == [Episode(T0, 7200, True)]


def test_a_missing_hour_breaks_the_stretch():
    hours = [IdleHour(T0, 0, 1800, 1800, False), IdleHour(T0 + 2 * H, 1200, 0, 1200, False)]
    assert idle_episodes(hours) == [Episode(T0 + 1800, 1800, False), Episode(T0 + 2 * H, 1200, False)]


def test_inner_runs_are_placed_at_the_hour_start():
    hours = [IdleHour(T0, 300, 0, 2000, False)]
    assert idle_episodes(hours) == [Episode(T0, 300, False), Episode(T0, 2000, False)]


def test_only_long_episodes_count():
    hours = [IdleHour(T0, 0, 1200, 1200, False), IdleHour(T0 + H, 600, 0, 600, False),
             IdleHour(T0 + 3 * H, 0, 1799, 1799, False)]
    assert long_episodes(hours, 1800) == [Episode(T0 + 2400, 1800, False)]


from hypothesis import given, strategies as st  # noqa: E402

from apps.ingest.rollup import merge_idle_runs  # noqa: E402


@st.composite
def idle_hours(draw):
    hours, t = [], T0
    for _ in range(draw(st.integers(0, 8))):
        t += H * draw(st.sampled_from([1, 1, 1, 2]))
        if draw(st.booleans()):
            hours.append(IdleHour(t, 3600, 3600, 3600, True))
        else:
            prefix = draw(st.sampled_from([0, 300, 1800]))
            suffix = draw(st.sampled_from([0, 600, 1200]))
            inner = draw(st.sampled_from([0, 900, 1500]))
            hours.append(IdleHour(t, prefix, suffix, max(prefix, suffix, inner), False))
    return hours


@given(idle_hours())
def test_the_longest_episode_is_what_the_idle_report_merges(hours):
    longest = max((e.idle_seconds for e in idle_episodes(hours)), default=0.0)
    assert longest == merge_idle_runs([(h.hour_start, h.prefix_seconds, h.suffix_seconds, h.max_run_seconds,
                                        h.whole_hour) for h in hours])
