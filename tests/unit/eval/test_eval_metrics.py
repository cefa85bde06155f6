"""Metrics on hand-made cases: normalisation, numbers, unicode, multi-valued answers."""

from __future__ import annotations

import pytest
from hrefine.eval.metrics import (
    answer_containment,
    answer_recall,
    compression_ratio,
    exact_match,
    normalize_answer,
    option_recall,
    paragraph_recall,
    scorable_answers,
    token_f1,
    token_recall,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The Beatles!", "beatles"),
        ("An  apple, a day", "apple day"),
        ("1,000", "1000"),
        ("1\u00a0000 people", "1000 people"),
        ("3,5", "3 5"),  # not a thousands separator: two groups of digits stay apart
        ("\uff11\uff12\uff13", "123"),  # fullwidth digits (NFKC)
        ("\ufb01nal", "final"),  # the "fi" ligature (NFKC)
        ("Stra\u00dfe", "strasse"),  # casefold
        ("co\u00adoperate", "cooperate"),  # soft hyphen is invisible
        ("Handmaid 's Tale", "handmaid s tale"),
        ("Handmaid's Tale", "handmaid s tale"),
        ("“quoted” — dash", "quoted dash"),
    ],
)
def test_normalize_answer_folds_case_punctuation_articles_unicode(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_containment_matches_numbers_with_and_without_thousands_separator() -> None:
    assert answer_containment("about 12000 fans attended", ["12,000"]) == 1.0
    assert answer_containment("about 12,000 fans attended", ["12000"]) == 1.0
    assert answer_containment("a crowd of 1\u202f000", ["1,000"]) == 1.0


def test_containment_is_whole_word() -> None:
    assert answer_containment("it scored 10 points", ["1"]) == 0.0
    assert answer_containment("it scored 1 point", ["1"]) == 1.0
    assert answer_containment("catalogue", ["cat"]) == 0.0


def test_containment_ignores_case_punctuation_and_articles() -> None:
    ctx = "Winner: the FRENCH Connection (1971), directed by William Friedkin."
    assert answer_containment(ctx, ["The French Connection"]) == 1.0
    assert answer_containment(ctx, ["william friedkin"]) == 1.0


def test_containment_unicode_nfkc_fullwidth_and_accents_kept() -> None:
    assert answer_containment("population \uff12\uff10\uff10\uff10", ["2000"]) == 1.0
    assert answer_containment("born in Zürich", ["Zürich"]) == 1.0
    assert answer_containment("born in Zu\u0308rich", ["Zürich"]) == 1.0  # combining diaeresis


def test_multi_valued_answers_need_all_in_all_mode_and_one_in_any_mode() -> None:
    ctx = "KK93 and WNAX were the stations."
    assert answer_containment(ctx, ["KK93", "The Dam"], mode="all") == 0.0
    assert answer_containment(ctx, ["KK93", "WNAX"], mode="all") == 1.0
    assert answer_containment(ctx, ["KK93", "The Dam"], mode="any") == 1.0
    assert answer_recall(ctx, ["KK93", "The Dam"]) == 0.5


def test_answer_made_only_of_an_article_is_still_matched() -> None:
    assert answer_containment("Grade: A (top)", ["A"]) == 1.0
    assert answer_containment("Grade: B", ["A"]) == 0.0


def test_yes_no_and_empty_answers_are_not_scorable() -> None:
    assert scorable_answers(["Yes", "Unanswerable", "  ", "!!", "Paris"]) == ["Paris"]
    # Was: "N/A" normalised to "n" (the article "a" dropped), so it was scored, and found in
    # nearly every context ("n = 40").
    assert scorable_answers(["N/A", "n/a", "N.A.", "A/N"]) == ["A/N"]
    assert answer_containment("yes it is", ["Yes"]) is None
    assert answer_recall("anything", ["No"]) is None


def test_containment_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError, match="mode"):
        answer_containment("x", ["x"], mode="some")


def test_paragraph_recall_counts_fully_present_paragraphs() -> None:
    gold = ["Alpha beta gamma.", "Delta epsilon zeta."]
    assert paragraph_recall("Intro. Alpha beta gamma. Outro.", gold) == 0.5
    assert paragraph_recall("alpha BETA gamma delta epsilon zeta", gold) == 1.0
    assert paragraph_recall("Delta epsilon", gold) == 0.0
    assert paragraph_recall("text", []) is None


def test_token_recall_is_bag_of_words_recall() -> None:
    assert token_recall("the cat sat", "the cat sat on the mat") == pytest.approx(3 / 6)
    assert token_recall("The the CAT sat on mat", "the cat sat on the mat") == 1.0
    assert token_recall("x", "") is None
    assert token_recall("1000 people", "1,000 people") == 1.0


def test_option_recall_ignores_function_words() -> None:
    # content words: wanted, escape, quickly; "they", "him", "to" are not counted
    assert option_recall("escape", "They wanted him to escape quickly") == pytest.approx(1 / 3)
    assert option_recall("they him to", "They wanted him to escape quickly") == 0.0
    # contraction and possessive fragments are dropped, the words they hang on are kept
    assert option_recall("korvin wouldn", "Korvin's guards wouldn't") == pytest.approx(2 / 3)
    # negations are content: they tell options apart
    assert option_recall("he did go", "He did not go") == pytest.approx(1 / 2)


def test_option_recall_strips_the_option_letter() -> None:
    assert option_recall("the ship landed", "(B) The ship landed") == 1.0
    assert option_recall("the ship landed", "B) The ship landed") == 1.0
    assert option_recall("the ship landed", "( c ) The ship landed") == 1.0
    # without stripping, "b" would be a content word the context lacks
    assert option_recall("ship", "(B) ship") == 1.0
    # only a leading letter is a label
    assert option_recall("ship", "ship (B)") == pytest.approx(1 / 2)


def test_option_recall_folds_case_and_unicode_and_counts_repeats() -> None:
    assert option_recall("ZÜRICH Café", "zurich cafe") == 1.0
    assert option_recall("Zu\u0308rich", "(A) Zürich") == 1.0  # combining diaeresis
    assert option_recall("1000 credits", "(C) 1,000 credits") == 1.0
    # each gold word counts as often as it occurs, matched at most as often as in the context
    assert option_recall("robots", "robots build robots") == pytest.approx(1 / 3)
    assert option_recall("robots robots build", "robots build robots") == 1.0


def test_option_recall_is_none_without_content_words() -> None:
    assert option_recall("anything at all", "(A) It was the one he had.") is not None  # "one"
    assert option_recall("anything at all", "(D) It was what they had.") is None
    assert option_recall("anything", "(B)") is None
    assert option_recall("anything", "") is None


def test_exact_match_and_f1_follow_squad_normalisation() -> None:
    assert exact_match("The Eiffel Tower.", ["eiffel tower"]) == 1.0
    assert exact_match("Eiffel", ["eiffel tower"]) == 0.0
    assert token_f1("Eiffel", ["eiffel tower"]) == pytest.approx(2 / 3)
    assert token_f1("nothing", ["eiffel tower"]) == 0.0
    assert token_f1("paris", ["london", "Paris"]) == 1.0
    assert exact_match("KK93 The Dam", ["KK93", "The Dam"], mode="all") == 1.0


def test_compression_ratio() -> None:
    assert compression_ratio(50, 200) == 0.25
    assert compression_ratio(5, 0) == 0.0
