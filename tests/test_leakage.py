from memlens.construction.text.leakage import PhraseIndex, tokens
from memlens.construction.text.validators import TurnSpec, check_turn


def test_token_bounded_matching():
    idx = PhraseIndex(["3", "Larkspur Books", "$23.40"])
    assert idx.find("I have 3 mugs.") == {"3"}
    assert idx.find("I have 13 mugs and 3.5 cups") == set()
    assert idx.find("We went to larkspur books, twice") == {"Larkspur Books"}
    assert idx.find("Larkspur Bookshop") == set()
    assert idx.find("it came to 23.40 in the end.") == {"$23.40"}
    assert tokens("Hello, World: 12.50.") == ["hello", "world", "12.50"]


def test_check_turn_reports_each_check():
    ok = TurnSpec("assistant", "word " * 160 + "Would you like tips?", words=(150, 250))
    assert check_turn(ok) == []
    assert "length" in check_turn(TurnSpec("assistant", "short?", words=(150, 250)))
    assert "end_marker" in check_turn(TurnSpec("assistant", "word " * 160 + "done.", words=(150, 250)))
    m = "Here is my shelf <image>"
    assert check_turn(TurnSpec("user", f"Hi. {m}.", n_images=1, mention=m)) == []
    assert "photo_directive" in check_turn(TurnSpec("user", "Hi <image> there.", n_images=1, mention=m))
    assert "ngram_leakage" in check_turn(TurnSpec("user", "It had 7 mugs.", forbidden=["7"]))
    assert "semantic_leakage" in check_turn(
        TurnSpec("user", f"Shop LUNA BAKERY. {m}.", n_images=1, mention=m, image_values=["Luna Bakery"])
    )
    assert "ambiguity" in check_turn(TurnSpec("user", "My kiwi now.", ambiguity=["kiwi"]))
