from oboyu.documents.keywords import stem, words


def test_japanese_words_drop_particles_and_use_dictionary_forms() -> None:
    assert words("東京都渋谷区で開かれた勉強会では、ベクトル検索を議論した。") == [
        "東京", "都", "渋谷", "区", "開く", "勉強", "会", "べくとる", "検索", "議論", "する",  # katakana folded
    ]


def test_single_kanji_and_full_width_forms() -> None:
    assert words("猫") == ["猫"]
    assert words("ＰＹＴＨＯＮの設定") == ["python", "設定"]  # NFKC and lower-case


def test_english_stemming_and_mixed_text() -> None:
    assert words("Indexing indexed indexes: the index!") == ["index", "index", "index", "the", "index"]
    assert words("gitのcommitを修正する") == ["git", "commit", "修正", "する"]
    assert [stem(w) for w in ("running", "passes", "status")] == ["run", "pass", "status"]
    assert stem("queries") == stem("query")
    # a user trial: "meetings" missed the note's "meeting", and "notes" met "not"
    assert len({stem(w) for w in ("meeting", "meetings", "meet")}) == 1
    assert stem("notes") == stem("note") != stem("not")
    assert stem("renewal") == stem("renewing") and stem("passwords") == stem("password")


def test_a_querys_english_function_words_are_not_its_terms() -> None:
    """A user trial: "how to file taxes in Germany" found docker.txt by "to" and "in" in keyword
    mode. Passages keep the words; a query of nothing else keeps them too."""
    from oboyu.documents.keywords import query_words, term_counts

    assert query_words("How to file taxes in Germany?") == [stem("file"), stem("taxes"), stem("germany")]
    assert query_words("the who") == ["the", "who"]
    assert query_words("会議の議事録をまとめる方法") == words("会議の議事録をまとめる方法")
    assert term_counts("how to file it")[stem("to")] == 1
