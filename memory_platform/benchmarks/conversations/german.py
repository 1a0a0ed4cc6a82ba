"""Deutsch: zwei befreundete Menschen in Deutschland schreiben sich über ein Jahr. Wertebänke,
Arten, jede Sorte Fakt zu erzählen, Smalltalk und Fragen, die umschreiben statt zu zitieren.

German needs word forms the English bank does not: slots carry the case a phrasing needs
(``a_breed`` "ein Beagle", ``a_breed_acc`` "einen Beagle"; ``bei`` "bei Siemens" / "an der
Charité"), and gendered nouns come as ``_f``/``_m`` pairs resolved for the person they
describe.
"""

from __future__ import annotations

from datetime import date

from memory_platform.benchmarks.conversations.language import Ask, Language, TimeWords

NAMES = {
    "f": ["Anna", "Lena", "Sarah", "Laura", "Julia", "Lisa", "Hannah", "Marie", "Sophie",
          "Katharina", "Johanna", "Miriam", "Franziska", "Carina", "Nele", "Jana", "Stefanie",
          "Theresa", "Melanie", "Pia", "Leonie", "Clara", "Ronja", "Annika", "Svenja", "Maike",
          "Greta", "Ella", "Ina", "Merle"],
    "m": ["Jonas", "Lukas", "Felix", "Tobias", "Max", "Niklas", "Simon", "Jan", "Moritz",
          "David", "Florian", "Sebastian", "Philipp", "Tim", "Paul", "Matthias", "Christian",
          "Stefan", "Benedikt", "Jannik", "Fabian", "Leon", "Malte", "Henrik", "Ole", "Till",
          "Kai", "Sven", "Julian", "Dominik"],
}

PRONOUNS = {
    "f": {"er": "sie", "ihn": "sie", "ihm": "ihr", "sein": "ihr", "seine": "ihre",
          "seinen": "ihren", "seinem": "ihrem", "seiner": "ihrer"},
    "m": {"er": "er", "ihn": "ihn", "ihm": "ihm", "sein": "sein", "seine": "seine",
          "seinen": "seinen", "seinem": "seinem", "seiner": "seiner"},
}


def _possessive(name: str) -> str:
    """Annas, Jonas', Max'."""
    return f"{name}'" if name[-1] in "sßxz" else f"{name}s"


CITIES = ["Leipzig", "Hamburg", "Köln", "München", "Freiburg", "Dresden", "Münster", "Bremen",
          "Nürnberg", "Kiel", "Heidelberg", "Regensburg", "Rostock", "Kassel", "Mainz", "Bonn",
          "Erfurt", "Potsdam", "Augsburg", "Lübeck"]


def _at(employer: str, bei: str = "", zu: str = "", short: str = "") -> dict[str, str]:
    """An employer: its name (answers); where one works, as told (``bei``, may describe it:
    "bei einem Start-up namens Flinkwerk") and as asked (``short``: "bei Flinkwerk"); where
    one goes (``zu``)."""
    return {"employer": employer, "bei": bei or f"bei {employer}", "zu": zu or f"zu {employer}",
            "short": short or bei or f"bei {employer}"}


JOBS = [
    {"role_f": "Krankenpflegerin", "role_m": "Krankenpfleger",
     "employers": [_at("Charité", "an der Charité", "an die Charité"),
                   _at("Uniklinikum Eppendorf", "am Uniklinikum Eppendorf",
                       "ans Uniklinikum Eppendorf"),
                   _at("Lindenhof", "bei einem Pflegedienst namens Lindenhof",
                       short="beim Pflegedienst Lindenhof")],
     "infer_q": "Wüsste {X} vermutlich, was zu tun ist, wenn jemand ohnmächtig wird?",
     "infer_a": "Wahrscheinlich ja: {er} arbeitet in der Pflege."},
    {"role_f": "Softwareentwicklerin", "role_m": "Softwareentwickler",
     "employers": [_at("SAP"), _at("Zalando"),
                   _at("Flinkwerk", "bei einem kleinen Start-up namens Flinkwerk",
                       short="bei Flinkwerk")],
     "infer_q": "Könnte {X} einem Freund wohl helfen, eine einfache Website zu bauen?",
     "infer_a": "Wahrscheinlich ja: {er} programmiert beruflich."},
    {"role_f": "Grundschullehrerin", "role_m": "Grundschullehrer",
     "employers": [_at("Lindenschule", "an der Lindenschule", "an die Lindenschule"),
                   _at("Grundschule am Park", "an der Grundschule am Park",
                       "an die Grundschule am Park"),
                   _at("Astrid-Lindgren-Schule", "an der Astrid-Lindgren-Schule",
                       "an die Astrid-Lindgren-Schule")],
     "infer_q": "Hat {X} vermutlich lange Sommerferien?",
     "infer_a": "Wahrscheinlich ja: {er} unterrichtet an einer Grundschule."},
    {"role_f": "Steuerberaterin", "role_m": "Steuerberater",
     "employers": [_at("KPMG"), _at("Kanzlei Brandt", "in der Kanzlei Brandt",
                                    "zur Kanzlei Brandt"),
                   _at("Stadtwerke", "bei den Stadtwerken", "zu den Stadtwerken")],
     "infer_q": "Hat {X} vermutlich im Frühjahr besonders viel zu tun?",
     "infer_a": "Sehr wahrscheinlich: {er} ist in der Steuerberatung."},
    {"role_f": "Grafikdesignerin", "role_m": "Grafikdesigner",
     "employers": [_at("Studio Kante", "bei einem Designstudio namens Studio Kante",
                       short="bei Studio Kante"),
                   _at("Jack Wolfskin"), _at("Lokalzeitung", "bei der Lokalzeitung",
                                             "zur Lokalzeitung")],
     "infer_q": "Hätte {X} eine Meinung zu einem schlecht gestalteten Logo?",
     "infer_a": "Ganz sicher: {er} gestaltet beruflich."},
    {"role_f": "Physiotherapeutin", "role_m": "Physiotherapeut",
     "employers": [_at("Bewegungsraum", "in einer Praxis namens Bewegungsraum",
                       "zum Bewegungsraum", "im Bewegungsraum"),
                   _at("Reha-Zentrum", "im Reha-Zentrum am Stadtrand", "ins Reha-Zentrum",
                       "im Reha-Zentrum"),
                   _at("Sportklinik", "in der Sportklinik", "in die Sportklinik")],
     "infer_q": "Wäre {X} eine gute Ansprechperson bei Rückenschmerzen?",
     "infer_a": "Ja: {er} ist in der Physiotherapie."},
    {"role_f": "Köchin", "role_m": "Koch",
     "employers": [_at("Trattoria da Gino", "in der Trattoria da Gino",
                       "in die Trattoria da Gino"),
                   _at("Hotel Adlon", "im Hotel Adlon", "ins Hotel Adlon"),
                   _at("Gartenküche", "in einem Bistro namens Gartenküche", "in die Gartenküche",
                       "in der Gartenküche")],
     "infer_q": "Könnte {X} vermutlich ein Abendessen für zehn Leute stemmen?",
     "infer_a": "Wahrscheinlich ja: {er} kocht beruflich."},
    {"role_f": "Elektrikerin", "role_m": "Elektriker",
     "employers": [_at("Elektro Bauer", "bei Elektro Bauer"),
                   _at("Universität", "an der Universität", "an die Universität"),
                   _at("Sonnwerk", "bei einer Solarfirma namens Sonnwerk", short="bei Sonnwerk")],
     "infer_q": "Könnte {X} wohl einen kaputten Lichtschalter reparieren?",
     "infer_a": "Sehr wahrscheinlich: {er} ist vom Fach."},
    {"role_f": "Ingenieurin", "role_m": "Ingenieur",
     "employers": [_at("Bosch"), _at("Siemens"), _at("Airbus")],
     "infer_q": "Hätte {X} vermutlich Spaß daran, ein technisches Problem auseinanderzunehmen?",
     "infer_a": "Wahrscheinlich ja: {er} ist {role}."},
    {"role_f": "Bankkauffrau", "role_m": "Bankkaufmann",
     "employers": [_at("Sparkasse", "bei der Sparkasse", "zur Sparkasse"),
                   _at("Commerzbank", "bei der Commerzbank", "zur Commerzbank"),
                   _at("Volksbank", "bei der Volksbank", "zur Volksbank")],
     "infer_q": "Wäre {X} eine gute Ansprechperson für Fragen zum Sparen?",
     "infer_a": "Wahrscheinlich: {er} arbeitet bei einer Bank."},
    {"role_f": "Tierarzthelferin", "role_m": "Tierarzthelfer",
     "employers": [_at("Tierklinik Nord", "in der Tierklinik Nord", "in die Tierklinik Nord"),
                   _at("Praxis Dr. Lang", "in der Praxis von Dr. Lang", "zu Dr. Lang"),
                   _at("Tierarztpraxis am Markt", "in der Tierarztpraxis am Markt",
                       "in die Tierarztpraxis am Markt")],
     "infer_q": "Käme {X} mit einem nervösen Hund gut zurecht?",
     "infer_a": "Wahrscheinlich ja: {er} arbeitet in einer Tierarztpraxis."},
    {"role_f": "Architektin", "role_m": "Architekt",
     "employers": [_at("Stein & Glas", "in einem Büro namens Stein & Glas", "zu Stein & Glas",
                       "bei Stein & Glas"),
                   _at("gmp"), _at("Bauamt", "beim Bauamt", "zum Bauamt")],
     "infer_q": "Hätte {X} Ideen, wie man eine Wohnung am besten aufteilt?",
     "infer_a": "Ganz sicher: {er} ist {role}."},
]

PETS = [
    {"species": "Hund", "a_species": "einen Hund", "a_young": "einen Welpen",
     "breeds": [{"breed": "Beagle", "a_breed": "ein Beagle", "a_breed_acc": "einen Beagle"},
                {"breed": "Border Collie", "a_breed": "ein Border Collie",
                 "a_breed_acc": "einen Border Collie"},
                {"breed": "Dackel", "a_breed": "ein Dackel", "a_breed_acc": "einen Dackel"},
                {"breed": "Golden Retriever", "a_breed": "ein Golden Retriever",
                 "a_breed_acc": "einen Golden Retriever"},
                {"breed": "Mops", "a_breed": "ein Mops", "a_breed_acc": "einen Mops"},
                {"breed": "Labrador", "a_breed": "ein Labrador",
                 "a_breed_acc": "einen Labrador"},
                {"breed": "Australian Shepherd", "a_breed": "ein Australian Shepherd",
                 "a_breed_acc": "einen Australian Shepherd"},
                {"breed": "Jack Russell Terrier", "a_breed": "ein Jack Russell Terrier",
                 "a_breed_acc": "einen Jack Russell Terrier"}],
     "pet_names": [{"name": "Bruno", "pet_g": "m"}, {"name": "Frieda", "pet_g": "f"},
                   {"name": "Balou", "pet_g": "m"}, {"name": "Paula", "pet_g": "f"},
                   {"name": "Emil", "pet_g": "m"}, {"name": "Luna", "pet_g": "f"},
                   {"name": "Anton", "pet_g": "m"}, {"name": "Kira", "pet_g": "f"}],
     "infer_q": "Ist {X} eher ein Hunde- oder ein Katzenmensch?",
     "infer_a": "Ein Hundemensch: {er} hat {a_breed_acc} namens {name}."},
    {"species": "Katze", "a_species": "eine Katze", "a_young": "ein Kätzchen",
     "breeds": [{"breed": "Maine Coon", "a_breed": "eine Maine Coon",
                 "a_breed_acc": "eine Maine Coon"},
                {"breed": "Siamkatze", "a_breed": "eine Siamkatze",
                 "a_breed_acc": "eine Siamkatze"},
                {"breed": "Britisch Kurzhaar", "a_breed": "eine Britisch Kurzhaar",
                 "a_breed_acc": "eine Britisch Kurzhaar"},
                {"breed": "Ragdoll", "a_breed": "eine Ragdoll", "a_breed_acc": "eine Ragdoll"},
                {"breed": "Bengalkatze", "a_breed": "eine Bengalkatze",
                 "a_breed_acc": "eine Bengalkatze"}],
     "pet_names": [{"name": "Mogli", "pet_g": "m"}, {"name": "Mimi", "pet_g": "f"},
                   {"name": "Karlchen", "pet_g": "m"}, {"name": "Lotte", "pet_g": "f"},
                   {"name": "Pünktchen", "pet_g": "f"}, {"name": "Tiger", "pet_g": "m"}],
     "infer_q": "Würde {X} wohl gern mal auf die Katze von Freunden aufpassen?",
     "infer_a": "Wahrscheinlich ja: {er} hat selbst {a_breed_acc} namens {name}."},
    {"species": "Kaninchen", "a_species": "ein Kaninchen", "a_young": "ein junges Kaninchen",
     "breeds": [{"breed": "Widderkaninchen", "a_breed": "ein Widderkaninchen",
                 "a_breed_acc": "ein Widderkaninchen"},
                {"breed": "Zwergkaninchen", "a_breed": "ein Zwergkaninchen",
                 "a_breed_acc": "ein Zwergkaninchen"},
                {"breed": "Löwenkopfkaninchen", "a_breed": "ein Löwenkopfkaninchen",
                 "a_breed_acc": "ein Löwenkopfkaninchen"}],
     "pet_names": [{"name": "Hoppel", "pet_g": "m"}, {"name": "Flocke", "pet_g": "f"},
                   {"name": "Möhrchen", "pet_g": "f"}, {"name": "Klopfer", "pet_g": "m"}],
     "infer_q": "Kennt sich {X} vermutlich mit Kleintieren aus?",
     "infer_a": "Wahrscheinlich: {er} hat {a_breed_acc} namens {name}."},
]

INSTRUMENTS = [
    {"instrument": "Gitarre", "lesson": "Gitarrenstunde"},
    {"instrument": "Klavier", "lesson": "Klavierstunde"},
    {"instrument": "Cello", "lesson": "Cellostunde"},
    {"instrument": "Geige", "lesson": "Geigenstunde"},
    {"instrument": "Schlagzeug", "lesson": "Schlagzeugstunde"},
    {"instrument": "Ukulele", "lesson": "Ukulelestunde"},
    {"instrument": "Saxofon", "lesson": "Saxofonstunde"},
    {"instrument": "Trompete", "lesson": "Trompetenstunde"},
]
for _instrument in INSTRUMENTS:
    _instrument.update({
        "hobby": _instrument["instrument"],
        "teacher": ["ein pensionierter Jazzmusiker", "eine Musikstudentin, halb so alt wie ich",
                    "eine sehr strenge Dame vom Konservatorium",
                    "ein Typ, der früher mit einer Band getourt ist"],
        "progress": ["Drei Akkorde und ein halbes Lied. Die Hälfte ist das Schwierige.",
                     "Eine sehr langsame Version von Happy Birthday. Mit Gefühl.",
                     "Tonleitern. Sehr viele Tonleitern. So fängt es wohl an.",
                     "Nichts, wofür jemand zahlen würde, aber meine Mutter hat geweint."],
        "infer_q": ["Hätte {X} vermutlich Spaß an einer Jamsession mit anderen?",
                    "Kann {X} wahrscheinlich ein bisschen Noten lesen?"],
        "infer_a": "Wahrscheinlich: {er} nimmt Unterricht in {instrument}."})

SPORTS = [
    {"sport": "Laufen", "club": "bei einem Lauftreff", "training": "Lauftraining",
     "goal": ["einen Halbmarathon im Frühjahr", "einen Zehn-Kilometer-Spendenlauf im Herbst"],
     "infer_q": "Hätte {X} vermutlich Spaß an einer langen Wanderung?",
     "infer_a": "Wahrscheinlich ja: {er} hat mit dem Laufen angefangen."},
    {"sport": "Bouldern", "club": "in einer Boulderhalle", "training": "Bouldertraining",
     "goal": ["einen Boulderwettkampf in der Halle", "eine Kletterreise ins Frankenjura"],
     "infer_q": "Ist {X} vermutlich schwindelfrei?",
     "infer_a": "Wahrscheinlich ja: {er} bouldert."},
    {"sport": "Schwimmen", "club": "in einem Schwimmverein", "training": "Schwimmtraining",
     "goal": ["eine Seeüberquerung im August", "einen Volkstriathlon"],
     "infer_q": "Hätte {X} wohl Freude an einem Urlaub am See?",
     "infer_a": "Wahrscheinlich ja: {er} hat mit dem Schwimmen angefangen."},
    {"sport": "Tennis", "club": "in einem Tennisverein", "training": "Tennistraining",
     "goal": ["die Vereinsmeisterschaft im Herbst", "ein Doppelturnier im Sommer"],
     "infer_q": "Hätte {X} wohl Lust auf eine Runde Badminton?",
     "infer_a": "Wahrscheinlich ja: {er} spielt jetzt Tennis."},
    {"sport": "Rudern", "club": "in einem Ruderverein", "training": "Rudertraining",
     "goal": ["eine Regatta im Juni", "eine Langstreckenregatta auf der Elbe"],
     "infer_q": "Ist {X} vermutlich daran gewöhnt, früh fürs Training aufzustehen?",
     "infer_a": "Wahrscheinlich: Ruderer trainieren früh, und {er} ist im Ruderverein."},
    {"sport": "Volleyball", "club": "in einer Volleyballmannschaft",
     "training": "Volleyballtraining",
     "goal": ["ein Beachturnier im Sommer", "die Aufstiegsrunde in der Stadtliga"],
     "infer_q": "Hätte {X} vermutlich Spaß an einem Strandtag mit Ballspielen?",
     "infer_a": "Wahrscheinlich ja: {er} spielt Volleyball."},
    {"sport": "Kickboxen", "club": "in einem Kickboxverein", "training": "Kickboxtraining",
     "goal": ["einen Benefizkampf im November", "die erste Gürtelprüfung"],
     "infer_q": "Ist {X} vermutlich ziemlich fit?",
     "infer_a": "Wahrscheinlich ja: {er} trainiert Kickboxen."},
    {"sport": "Yoga", "club": "in einem Yogastudio", "training": "Yogapraxis",
     "goal": ["ein Yoga-Retreat in den Bergen", "eine Yogalehrer-Ausbildung nächstes Jahr"],
     "infer_q": "Hätte {X} vermutlich Lust auf ein Meditationswochenende?",
     "infer_a": "Wahrscheinlich ja: {er} hat mit Yoga angefangen."},
]
for _sport in SPORTS:
    _sport["hobby"] = _sport["sport"]

CRAFTS = [
    {"craft": "Töpfern", "craft_class": "einen Töpferkurs",
     "made": [{"item": "eine schiefe Tasse für meine Mutter", "item_short": "eine Tasse"},
              {"item": "eine kleine Schale, die etwas zur Seite kippt",
               "item_short": "eine Schale"}]},
    {"craft": "Stricken", "craft_class": "einen Strickkurs",
     "made": [{"item": "eine Strickjacke für meinen Vater, etwas zu lang",
               "item_short": "eine Strickjacke"},
              {"item": "eine Mütze, die riesig geworden ist", "item_short": "eine Mütze"}]},
    {"craft": "Tischlern", "craft_class": "einen Tischlerkurs",
     "made": [{"item": "ein kleines Bücherregal für den Flur", "item_short": "ein Bücherregal"},
              {"item": "ein Schneidebrett aus Nussbaum", "item_short": "ein Schneidebrett"}]},
    {"craft": "Nähen", "craft_class": "einen Nähkurs",
     "made": [{"item": "eine Stofftasche mit Zitronenmuster", "item_short": "eine Stofftasche"},
              {"item": "ein Sommerhemd mit schiefen Knöpfen", "item_short": "ein Hemd"}]},
    {"craft": "Buchbinden", "craft_class": "einen Buchbindekurs",
     "made": [{"item": "ein Notizbuch mit Leineneinband", "item_short": "ein Notizbuch"}]},
    {"craft": "Aquarellmalen", "craft_class": "einen Aquarellkurs",
     "made": [{"item": "ein Aquarell vom Garten meiner Oma", "item_short": "ein Aquarell"}]},
    {"craft": "Goldschmieden", "craft_class": "einen Goldschmiedekurs",
     "made": [{"item": "ein Paar Silberohrringe", "item_short": "Silberohrringe"}]},
]
for _craft in CRAFTS:
    _craft["hobby"] = _craft["craft"]
    _craft["place"] = ["an der Volkshochschule", "in einem kleinen Atelier in der Altstadt",
                       "in der Kunstschule"]
    _craft["infer_q"] = "Hätte {X} vermutlich Spaß auf einem Kunsthandwerkermarkt?"
    _craft["infer_a"] = "Wahrscheinlich ja: {er} hat mit dem {craft} angefangen."


def _dest(name: str, *highlights: str, in_: str = "", to: str = "", from_: str = ""
          ) -> dict[str, object]:
    """A destination with the prepositions it takes: in/nach/aus Lissabon, auf/nach/von
    Kreta."""
    return {"dest": name, "in_dest": in_ or f"in {name}", "to_dest": to or f"nach {name}",
            "from_dest": from_ or f"aus {name}", "highlight": list(highlights)}


TRIPS = [
    _dest("Lissabon", "die Fahrt mit der alten gelben Straßenbahn",
          "der Abend in der winzigen Fado-Bar"),
    _dest("Kopenhagen", "die Radtour am Hafen entlang",
          "das Frühstück mit Zimtschnecken am Kanal"),
    _dest("Island", "das Baden in heißen Quellen, während es schneite",
          "die Nacht, in der wir Polarlichter gesehen haben"),
    _dest("Rom", "das Eis, zweimal am Tag", "der Spaziergang durch Trastevere am Abend"),
    _dest("Toskana", "die Weinprobe auf einem alten Gut", "der Sonnenuntergang über den Hügeln",
          in_="in der Toskana", to="in die Toskana", from_="aus der Toskana"),
    _dest("Wien", "der Kaiserschmarrn im Kaffeehaus", "der Abend im Prater auf dem Riesenrad"),
    _dest("Amsterdam", "die Bootsfahrt über die Grachten", "der Flohmarkt am Sonntagmorgen"),
    _dest("Norwegen", "die Wanderung zum Preikestolen", "die Fahrt durch die Fjorde"),
    _dest("Sizilien", "das Schwimmen im Meer vor dem Frühstück", "der Ausflug auf den Ätna",
          in_="auf Sizilien"),
    _dest("Krakau", "der Abend im jüdischen Viertel", "das Pierogi-Essen in einer winzigen Bar"),
    _dest("Südtirol", "die Hüttenwanderung in den Dolomiten",
          "das Frühstück mit Blick auf die Berge"),
    _dest("Kreta", "die Wanderung durch die Samaria-Schlucht", "die kleine Taverne am Hafen",
          in_="auf Kreta", from_="von Kreta"),
]

COMPANIONS = [
    {"type": "sibling", "companion_f": "meiner Schwester {sib}",
     "companion_m": "meinem Bruder {sib}",
     "companion_ans_f": "{seine} Schwester {sib}", "companion_ans_m": "{sein} Bruder {sib}"},
    {"type": "partner", "companion": "{partner}",
     "companion_ans_f": "{seine} Freundin {partner}", "companion_ans_m": "{sein} Freund {partner}"},
    {"type": "friend", "companion_f": "meiner Freundin {friend}",
     "companion_m": "meinem Kumpel {friend}",
     "companion_ans_f": "{seine} Freundin {friend}", "companion_ans_m": "{sein} Kumpel {friend}"},
    {"type": "parents", "companion": "meinen Eltern", "companion_ans": "{seine} Eltern"},
]

CARS = [{"model": model, "state": [
    {"condition_acc": "gebrauchten", "condition_note": "Gebraucht, aber er fährt sich wie ein "
                                                      "Traum."},
    {"condition_acc": "nagelneuen", "condition_note": "Nagelneu, ich kann's selbst kaum "
                                                      "glauben."}]}
    for model in ("VW Golf", "Opel Corsa", "Skoda Octavia", "Ford Fiesta", "Toyota Yaris",
                  "Fiat 500", "Renault Clio", "Mazda 3", "Seat Ibiza", "Hyundai i30")]

COLOURS = [{"colour": colour, "colour_acc": f"{colour}en", "colour_nom": f"{colour}er"}
           for colour in ("dunkelblau", "rot", "dunkelgrün", "weiß", "schwarz", "senfgelb",
                          "grau", "hellblau")]

BIKES = [{"bike": bike, "brand": ["Cube", "Canyon", "Riese & Müller", "Gazelle", "Stevens"],
          "bike_colour": ["mattschwarzes", "oranges", "mintgrünes", "blaues"],
          "purpose": ["Ich will damit jeden Tag zur Arbeit fahren.",
                      "Der Plan sind Wochenendtouren am Fluss entlang.",
                      "Hauptsächlich für Einkäufe und Erledigungen, aber auch zum Spaß."]}
         for bike in ("Gravelbike", "E-Bike", "Lastenrad", "Rennrad", "Mountainbike")]

COURSES = [
    {"subject": "Spanisch", "course_name": "Spanischkurs", "hobby": "Spanisch",
     "why": "Ich will mich endlich richtig mit meinen Nachbarn unterhalten können.",
     "progress": "Ich kann mich vorstellen und einen Kaffee bestellen. Kleine Schritte.",
     "infer_q": "Käme {X} in Spanien beim Essenbestellen wohl zurecht?",
     "infer_a": "Einigermaßen: {er} lernt Spanisch."},
    {"subject": "Italienisch", "course_name": "Italienischkurs", "hobby": "Italienisch",
     "why": "Meine Oma kam aus Neapel, und ich hab's nie gelernt.",
     "progress": "Ich kenne jedes Wort für Nudeln. Die Verben eher nicht.",
     "infer_q": "Könnte {X} im Italienurlaub ein bisschen Smalltalk machen?",
     "infer_a": "Ein bisschen: {er} lernt Italienisch."},
    {"subject": "Japanisch", "course_name": "Japanischkurs", "hobby": "Japanisch",
     "why": "Ich hab so viel Anime geschaut, dass es der logische nächste Schritt war, haha.",
     "progress": "Ich kann jetzt Hiragana lesen. Langsam.",
     "infer_q": "Könnte {X} ein paar einfache japanische Schilder lesen?",
     "infer_a": "Ein paar wahrscheinlich: {er} lernt Japanisch."},
    {"subject": "Fotografie", "course_name": "Fotokurs", "hobby": "Fotografie",
     "why": "Ich hab eine gute Kamera und sie immer nur auf Automatik benutzt.",
     "progress": "Ich weiß endlich, was Blende bedeutet.",
     "infer_q": "Würde sich {X} über ein neues Objektiv als Geschenk freuen?",
     "infer_a": "Wahrscheinlich ja: {er} macht einen Fotokurs."},
    {"subject": "Erste Hilfe", "course_name": "Erste-Hilfe-Kurs", "hobby": "Erste Hilfe",
     "why": "Letztes Jahr ist jemand an der Bushaltestelle umgekippt, und keiner wusste, "
            "was zu tun ist.",
     "progress": "Ich kann jetzt Herzdruckmassage an einer Puppe. Der Puppe geht's gut.",
     "infer_q": "Wüsste {X}, wie man jemandem hilft, der zusammenbricht?",
     "infer_a": "Wahrscheinlich ja: {er} hat einen Erste-Hilfe-Kurs gemacht."},
    {"subject": "Gebärdensprache", "course_name": "Gebärdensprachkurs",
     "hobby": "Gebärdensprache",
     "why": "Eine neue Kollegin ist gehörlos, und ich will mich direkt mit ihr unterhalten.",
     "progress": "Ich kann das Alphabet gebärden und ein paar Witze.",
     "infer_q": "Könnte sich {X} ein wenig mit einer gehörlosen Person verständigen?",
     "infer_a": "Ein wenig: {er} lernt Gebärdensprache."},
    {"subject": "Programmieren", "course_name": "Programmierkurs", "hobby": "Programmieren",
     "why": "Ich will die langweiligen Teile meiner Arbeit automatisieren.",
     "progress": "Ich hab ein Programm geschrieben, das mir sagt, ob es regnet. Es liegt "
                 "meistens falsch.",
     "infer_q": "Könnte {X} vermutlich ein kleines Skript schreiben?",
     "infer_a": "Wahrscheinlich: {er} macht einen Programmierkurs."},
]
for _course in COURSES:
    _course["place"] = ["an der Volkshochschule", "in der Stadtbibliothek",
                        "in einer Sprachschule in der Innenstadt"]
    _course["day"] = ["montag", "dienstag", "mittwoch", "donnerstag"]

BOOKS = [{"title": title, "author": author, "pitch": pitch} for title, author, pitch in (
    ("Altes Land", "Dörte Hansen", "eine Geschichte über zwei Frauen und ein altes Haus"),
    ("Mittagsstunde", "Dörte Hansen", "über ein Dorf in Nordfriesland, das verschwindet"),
    ("Unterleuten", "Juli Zeh", "ein Dorfroman, bei dem man niemandem trauen kann"),
    ("Der Trafikant", "Robert Seethaler", "über einen Jungen in Wien, der Freud kennenlernt"),
    ("Ein ganzes Leben", "Robert Seethaler", "still und traurig und wunderschön"),
    ("Tschick", "Wolfgang Herrndorf", "ein Roadtrip zweier Jungs, lustig und herzzerreißend"),
    ("Die Vermessung der Welt", "Daniel Kehlmann", "über zwei Forscher, total skurril"),
    ("Vom Ende der Einsamkeit", "Benedict Wells", "eine Familiengeschichte, die lange nachhallt"),
    ("Der Gesang der Flusskrebse", "Delia Owens", "ein Krimi und eine Naturbeschreibung in "
                                                  "einem"),
    ("Kruso", "Lutz Seiler", "über einen Sommer auf Hiddensee kurz vor der Wende"))]

SERIES = [{"series": series, "pitch": pitch} for series, pitch in (
    ("Babylon Berlin", "Zwanzigerjahre, Verbrechen und diese Musik"),
    ("Dark", "so verwirrend, dass ich mir einen Stammbaum aufmalen musste"),
    ("How to Sell Drugs Online (Fast)", "absurd und viel klüger, als der Titel klingt"),
    ("Der Tatortreiniger", "kurz, schwarzhumorig und erstaunlich philosophisch"),
    ("Kleo", "eine Ex-Stasi-Agentin auf Rachefeldzug, total überdreht"),
    ("Die Discounter", "eine Mockumentary über einen Supermarkt, so lustig"),
    ("Deutschland 83", "ein Spion im Kalten Krieg, mit super Achtzigermusik"),
    ("Ku'damm 56", "über eine Tanzschule in den Fünfzigern, sehr berührend"))]

CONCERTS = [{"band": band, "venue": ["auf einer Open-Air-Bühne am See", "in der alten Stadthalle",
                                      "in einer riesigen Arena",
                                      "in einem winzigen Club, komplett ausverkauft"]}
            for band in ("Beatsteaks", "AnnenMayKantereit", "Seeed", "Kraftklub",
                         "Element of Crime", "Wir sind Helden", "Von Wegen Lisbeth",
                         "Tocotronic", "Deichkind", "Giant Rooks")]

VOLUNTEERING = [
    {"org": "im Tierheim", "task": "mit den Hunden Gassi gehen und Zwinger putzen",
     "infer_q": "Liegen {X} Tiere vermutlich am Herzen?",
     "infer_a": "Ja: {er} hilft ehrenamtlich im Tierheim."},
    {"org": "bei der Tafel", "task": "Spenden sortieren und Kisten packen",
     "infer_q": "Würde {X} vermutlich eine Lebensmittelsammlung in der Nachbarschaft "
                "unterstützen?",
     "infer_a": "Wahrscheinlich ja: {er} hilft bei der Tafel."},
    {"org": "in der Stadtbibliothek", "task": "Kindern vorlesen",
     "infer_q": "Kann {X} vermutlich gut mit Kindern?",
     "infer_a": "Wahrscheinlich: {er} liest ehrenamtlich Kindern vor."},
    {"org": "in einem Gemeinschaftsgarten", "task": "Unkraut jäten, gießen und Kindern das "
                                                    "Pflanzen beibringen",
     "infer_q": "Weiß {X} vermutlich ein bisschen übers Gemüseanbauen?",
     "infer_a": "Wahrscheinlich: {er} hilft in einem Gemeinschaftsgarten."},
    {"org": "in einem Seniorenheim", "task": "mit den Bewohnern Karten spielen und quatschen",
     "infer_q": "Ist {X} vermutlich geduldig mit älteren Menschen?",
     "infer_a": "Wahrscheinlich ja: {er} besucht ehrenamtlich ein Seniorenheim."},
    {"org": "bei einer Initiative für Geflüchtete", "task": "Familien bei Formularen und beim "
                                                           "Deutschlernen helfen",
     "infer_q": "Liegt {X} vermutlich etwas daran, Neuankömmlingen zu helfen?",
     "infer_a": "Ja: {er} engagiert sich bei einer Initiative für Geflüchtete."},
]
for _volunteering in VOLUNTEERING:
    _volunteering["day"] = ["samstag", "sonntag"]

DIETS = [
    {"diet": "vegetarisch", "diet_reason": "Ehrlich gesagt: eine Doku zu viel.",
     "infer_q": "Wäre ein Steakhaus eine gute Wahl für ein Abendessen mit {X}?",
     "infer_a": "Eher nicht: {er} isst kein Fleisch mehr."},
    {"diet": "vegan", "diet_reason": "Hauptsächlich fürs Klima, und ich fühl mich auch besser.",
     "infer_q": "Würde {X} ein Käseomelett essen?",
     "infer_a": "Nein: {er} lebt jetzt vegan."},
    {"diet": "glutenfrei", "diet_reason": "Die Ärztin hat endlich rausgefunden, dass ich "
                                          "Zöliakie habe.",
     "infer_q": "Wäre ein Pizza-und-Pasta-Abend das Richtige für {X}?",
     "infer_a": "Eher nicht: {er} muss auf Gluten verzichten."},
    {"diet": "laktosefrei", "diet_reason": "Stellt sich raus, ich vertrage keine Laktose. Wer "
                                           "hätte das gedacht.",
     "infer_q": "Hätte {X} Freude an einem Käsefondue-Abend?",
     "infer_a": "Eher nicht: {er} verträgt keine Milchprodukte."},
    {"diet": "pescetarisch", "diet_reason": "Ich wollte kein Fleisch mehr, aber ohne Sushi "
                                            "geht's nicht.",
     "infer_q": "Würde {X} in ein Sushi-Restaurant mitgehen?",
     "infer_a": "Ja: {er} isst Fisch, nur kein Fleisch."},
]

PROJECTS = [{"project": project, "project_detail": detail} for project, detail in (
    ("den Umzug ins neue Bürogebäude",
     "Wenn wir bis März überleben, nehm ich mir eine Woche frei."),
    ("den Launch der neuen Kunden-App",
     "In sechs Wochen geht's live, und noch funktioniert gar nichts."),
    ("die Feier zum 25. Firmenjubiläum",
     "Dreihundert Gäste. Ich träume nachts von Sitzplänen."),
    ("die Umstellung auf ein neues Schichtplanungssystem",
     "Alle hassen Veränderungen, also hassen gerade alle mich."),
    ("die Einarbeitung von vier neuen Kolleginnen und Kollegen",
     "Sie sind lieb, aber ich beantworte zehnmal am Tag dieselbe Frage."),
    ("das große Audit im Herbst", "Ich hab noch nie so viele Tabellen gesehen."))]

INJURIES = [
    {"injury_acc": "das Handgelenk", "injured_pp": "gebrochen",
     "injury": "ein gebrochenes Handgelenk", "injury_noun": "Handgelenksbruch",
     "treatment": "Sechs Wochen Gips, sagen sie. Tippen mit einer Hand macht total Spaß."},
    {"injury_acc": "den Knöchel", "injured_pp": "verstaucht",
     "injury": "einen verstauchten Knöchel", "injury_noun": "Knöchelverletzung",
     "treatment": "Zwei Wochen Krücken, dann sehen wir weiter."},
    {"injury_acc": "das Kreuzband", "injured_pp": "gerissen", "injury": "einen Kreuzbandriss",
     "injury_noun": "Kreuzbandriss",
     "treatment": "Zweimal die Woche Physio, wer weiß wie lange."},
    {"injury_acc": "eine Rippe", "injured_pp": "angebrochen",
     "injury": "eine angebrochene Rippe", "injury_noun": "Rippenverletzung",
     "treatment": "Man kann nur abwarten. Lachen tut weh, also sei bitte nicht witzig."},
    {"injury_acc": "einen Hexenschuss", "injured_pp": "geholt", "injury": "einen Hexenschuss",
     "injury_noun": "Hexenschuss",
     "treatment": "Wärmekissen und wie ein Seestern auf dem Boden liegen."},
]
for _injury in INJURIES:
    _injury["cause"] = ["auf der nassen Treppe bei der Arbeit ausgerutscht",
                        "auf dem Radweg zu schnell in die Kurve gegangen und gestürzt",
                        "mit dem Wäschekorb auf der Treppe gestolpert",
                        "vor dem Supermarkt auf dem Eis ausgerutscht",
                        "beim Basketball blöd gelandet"]

CONDITIONS = [
    {"condition": "eine neue Hüfte",
     "condition_past": "hat {when} eine neue Hüfte bekommen",
     "condition_story": "{Par_er} hat endlich die neue Hüfte bekommen, nach Jahren mit "
                        "Schmerzen."},
    {"condition": "eine Lungenentzündung",
     "condition_past": "lag {when} mit einer Lungenentzündung im Krankenhaus",
     "condition_story": "Es war eine Lungenentzündung, und ein paar Tage war es echt "
                        "beängstigend."},
    {"condition": "eine Operation am Knie",
     "condition_past": "ist {when} am Knie operiert worden",
     "condition_story": "{Par_er} musste nach einem Sturz im Garten am Knie operiert werden."},
    {"condition": "eine Operation an der Gallenblase",
     "condition_past": "musste {when} an der Gallenblase operiert werden",
     "condition_story": "Die Gallenblase musste raus, eine Notoperation."},
    {"condition": "einen Stent am Herzen",
     "condition_past": "hat {when} einen Stent am Herzen bekommen",
     "condition_story": "{Par_er} hatte Schmerzen in der Brust, und sie haben einen Stent am "
                        "Herzen gesetzt."},
]

VALUES = {
    "job": JOBS,
    "years": [{"years": years} for years in ("zwei", "drei", "vier", "fünf", "sechs", "acht")],
    "city": [{"city": city} for city in CITIES],
    "home_detail": [{"home_detail": detail} for detail in (
        "einer kleinen Wohnung über einer Bäckerei", "einem kleinen Reihenhaus mit Garten",
        "einer Altbauwohnung im vierten Stock ohne Aufzug", "einer WG mit zwei Mitbewohnern",
        "einem Einzimmerapartment mit riesigem Fenster", "einer Wohnung direkt am Park")],
    "move_reason": [{"reason": reason} for reason in (
        "Es ist näher an meiner Familie, und die hab ich mehr vermisst als gedacht.",
        "Die Miete ist fast halb so hoch wie vorher.",
        "Ich wollte näher am Wasser wohnen.",
        "Ich brauchte ehrlich gesagt einfach einen Neuanfang.",
        "Ich kann von hier zu Fuß zur Arbeit, ein Traum.")],
    "sibling": [
        {"rel": "Schwester", "sib_g": "f", "my_rel": "meine Schwester",
         "your_rel_dat": "deiner Schwester", "married_rel": "frisch verheiratete Schwester",
         "who": "die", "parent_word": "Mama"},
        {"rel": "Bruder", "sib_g": "m", "my_rel": "mein Bruder",
         "your_rel_dat": "deinem Bruder", "married_rel": "frisch verheirateter Bruder",
         "who": "der", "parent_word": "Papa"}],
    "sib_job": [{"sib_job_f": female, "sib_job_m": male} for female, male in (
        ("Zahnärztin", "Zahnarzt"), ("Feuerwehrfrau", "Feuerwehrmann"),
        ("Apothekerin", "Apotheker"), ("Flugbegleiterin", "Flugbegleiter"),
        ("Notfallsanitäterin", "Notfallsanitäter"), ("Konditorin", "Konditor"),
        ("Versicherungskauffrau", "Versicherungskaufmann"), ("Försterin", "Förster"),
        ("Maklerin", "Makler"), ("Pilotin", "Pilot"))],
    "venue": [{"venue": venue} for venue in (
        "auf einem Weingut an der Mosel", "in einer alten Scheune auf dem Land",
        "im Standesamt im Rathaus", "in einem Gasthof am See",
        "in einer kleinen Kapelle an der Ostsee", "im Garten unserer Großeltern")],
    "baby": [{"niece_f": "Nichte", "niece_m": "Neffe", "new_niece_f": "neue Nichte",
              "new_niece_m": "neuer Neffe", "a_girl_f": "ein Mädchen", "a_girl_m": "einen Jungen",
              "tiny_f": "ein winziges Mädchen", "tiny_m": "ein winziger Junge"}],
    "weight": [{"weight": weight} for weight in (
        "3400 Gramm", "knapp vier Kilo", "3100 Gramm", "3850 Gramm")],
    "relative": [
        {"relative": "Mutter", "par_g": "f", "my_par": "meine Mutter",
         "your_par_dat": "deiner Mutter"},
        {"relative": "Vater", "par_g": "m", "my_par": "mein Vater",
         "your_par_dat": "deinem Vater"},
        {"relative": "Oma", "par_g": "f", "my_par": "meine Oma", "your_par_dat": "deiner Oma"},
        {"relative": "Opa", "par_g": "m", "my_par": "mein Opa", "your_par_dat": "deinem Opa"}],
    "condition": CONDITIONS,
    "pet": PETS,
    "instrument": INSTRUMENTS,
    "sport": SPORTS,
    "drop_reason": [{"drop_reason": reason} for reason in (
        "Mein Knie hat einfach nicht mehr mitgemacht.",
        "Sie haben alles auf Dienstagabend verlegt, und da kann ich nie.",
        "Es hat sich angefühlt wie ein zweiter Job.",
        "Der Mitgliedsbeitrag ist viel zu teuer geworden.")],
    "craft": CRAFTS,
    "trip": TRIPS,
    "duration": [{"duration": duration} for duration in (
        "eine Woche", "zehn Tage", "ein langes Wochenende", "zwei Wochen", "fünf Tage")],
    "companion": COMPANIONS,
    "car": CARS,
    "colour": COLOURS,
    "car_reason": [{"car_reason": reason} for reason in (
        "Die Werkstatt meinte, die Reparatur wäre teurer als das ganze Auto.",
        "Jemand ist mir auf dem Parkplatz reingefahren. Totalschaden.",
        "Das alte hat mehr Öl als Benzin geschluckt.")],
    "bike": BIKES,
    "course": COURSES,
    "book": BOOKS,
    "series": SERIES,
    "concert": CONCERTS,
    "volunteer": VOLUNTEERING,
    "diet": DIETS,
    "project": PROJECTS,
    "injury": INJURIES,
    "where_met": [{"where_met": place} for place in (
        "auf dem Geburtstag einer Freundin", "über eine Dating-App",
        "in der Schlange am Wochenmarkt", "auf einer Hochzeit", "bei einem Spieleabend",
        "bei einer Wanderung mit Freunden")],
    "proposal": [{"proposal": proposal} for proposal in (
        "Bei einer Wanderung, ganz oben am Gipfel, bei Sonnenaufgang",
        "In dem Restaurant, in dem wir unser erstes Date hatten",
        "Am Strand, im strömenden Regen",
        "Zu Hause, im Schlafanzug, beim Pfannkuchenfrühstück")],
}

MONTHS = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
          "Oktober", "November", "Dezember")


def _date_text(day: date) -> str:
    return f"{day.day}. {MONTHS[day.month - 1]} {day.year}"


def _elapsed(days: int) -> str:
    if days < 70:
        weeks = round(days / 7)
        return f"etwa {weeks} Wochen" if weeks != 1 else "etwa eine Woche"
    return f"etwa {round(days / 30.4)} Monate"


TIME = TimeWords(
    weekdays=("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"),
    phrases={"yesterday": "gestern", "weekday": "am {weekday}", "weekend": "letztes Wochenende",
             "last_week": "letzte Woche", "two_weeks": "vor zwei Wochen",
             "today": "heute Morgen"},
    answers={"weekend": "das Wochenende vor dem {date}", "last_week": "die Woche vor dem {date}",
             "two_weeks": "zwei Wochen vor dem {date}"},
    date_text=_date_text,
    elapsed=_elapsed,
)

REACTIONS = {
    "wow": ["Wow!", "Krass!", "Nicht dein Ernst!", "Wie cool!", "Oh mein Gott!", "Wahnsinn!",
            "Echt jetzt?!", "Hammer!", "Was?!"],
    "aw": ["Oh nein.", "Oh nein, das tut mir so leid.", "Ach Mensch.", "Das klingt echt übel.",
           "Mist, das ist blöd.", "Oh je."],
    "ha": ["Haha", "Hahaha", "Lol", "Hehe", "Hah"],
    "nice": ["Schön!", "Cool!", "Wie schön.", "Klingt gut!", "Find ich super.", "Oh, nice."],
    # Smalltalk-Einsätze
    "dinner": ["Selbstgemachte Tacos. Viel zu viele.",
               "Kalte Pizza von gestern, direkt vorm Kühlschrank.",
               "Einen großen Topf Linsensuppe. Sehr vernünftig.",
               "Pfannkuchen. Für mich gelten keine Abendessensregeln.",
               "Nur ein Toast. Es war so ein Tag.", "Ramen mit Ei obendrauf. Fünf Sterne.",
               "Einen Salat und danach eine Tüte Chips zur Erholung.",
               "Spaghetti mit viel zu viel Knoblauch.",
               "Curry vom Lieferdienst, ich bereue nichts.",
               "Käsetoast und Tomatensuppe. Seelenfutter.",
               "Bratreis aus allem, was noch im Kühlschrank war.",
               "Müsli. Ich bin eine funktionierende erwachsene Person."],
    "dinner_reply": ["Klingt perfekt.", "Ehrlich, Respekt.", "Jetzt hab ich Hunger.",
                     "Haha, sehr gut.", "Neidisch, ich hatte nur Knäckebrot."],
    "weekend_plan": ["Absolut gar nichts, und ich freu mich riesig drauf.",
                     "Putzen, leider. Die Wohnung ist ein Desaster.",
                     "Ein Geburtstagsessen bei Freunden am Samstag.",
                     "Ausschlafen und hoffentlich ein langer Spaziergang.",
                     "Wochenmarkt und dann Sofa.", "Spieleabend mit ein paar Leuten.",
                     "Einer Freundin beim Streichen helfen.", "Endlich das Puzzle fertig machen.",
                     "Filmmarathon, mit Decke.", "Wäsche nachholen. Sehr glamourös, ich weiß."],
    "weekend_reply": ["Die besten Pläne.", "Klingt schön!", "Viel Spaß!", "Haha, viel Glück.",
                      "Gönn dir."],
    "small_win": ["Ich hab endlich für jede Dose in meiner Küche den passenden Deckel gefunden.",
                  "Ich hatte heute im Bus einen Sitzplatz. Hin und zurück!",
                  "Ich war beim Bäcker, kurz bevor die Zimtschnecken aus waren.",
                  "Meine Tomatenpflanze hat ihre erste Tomate!",
                  "Ich hab heute beim ersten Versuch eingeparkt.",
                  "Ich hab die Kopfhörer wiedergefunden, die ich für verloren hielt.",
                  "Ich hab alle Mails beantwortet. Posteingang leer!",
                  "Den wackeligen Tisch hab ich mit einem gefalteten Bierdeckel repariert. "
                  "Ingenieurskunst.",
                  "Im Café kannten sie heute meine Bestellung auswendig. Ich bin jetzt "
                  "Stammkundschaft.",
                  "Mein Sauerteigbrot ist diesmal tatsächlich aufgegangen."],
    "small_win_reply": ["Großer Sieg!", "Haha, das muss gefeiert werden!", "Stark.",
                        "Die kleinen Siege!", "Schön, das ist ein guter Tag."],
    "annoyance": ["Die Autoalarmanlage vom Nachbarn ist letzte Nacht viermal losgegangen.",
                  "Ich bin direkt vor der Haustür in eine Pfütze getreten. Den ganzen Tag nasse "
                  "Socke.",
                  "Der Drucker auf der Arbeit hatte schon wieder Papierstau. Zum dritten Mal "
                  "heute.",
                  "Mein Paket wurde schon wieder an die falsche Adresse geliefert.",
                  "Jemand hat mein Mittagessen aus dem Büro-Kühlschrank gegessen.",
                  "Mein Kopfhörer-Akku war mitten im Podcast leer.",
                  "Ich hab vierzig Minuten auf einen Bus gewartet, der nie kam.",
                  "Das WLAN fliegt alle zehn Minuten raus.",
                  "Ich hab mir vor einem Meeting Kaffee übers Hemd gekippt.",
                  "Die Bahn hatte schon wieder eine Stunde Verspätung."],
    "annoyance_reply": ["Boah, das Schlimmste.", "Oh nein.", "Wie nervig.",
                        "Haha, Klassiker. Halt durch.", "Mist, das tut mir leid."],
}

SCRIPTS = {
    "job": [
        ("L: Erinnere mich mal, was machst du eigentlich gerade beruflich?",
         "T: Ich bin {role} {bei}, inzwischen seit {years} Jahren. #role,employer",
         "L: {nice} Gefällt's dir da?",
         "T: Meistens schon. Die Leute sind super, der Kaffee leider nicht."),
        ("T: Die Arbeit frisst mich diese Woche auf. Als ich {role} geworden bin, dachte ich, "
         "das wird entspannter, haha. #role",
         "L: {ha}, was ist denn los?",
         "T: Das halbe Team ist krank, ich mach die Arbeit von drei Leuten. {Short} müssten sie "
         "echt mal mehr Leute einstellen. #employer",
         "L: Oh Mann. Mach wenigstens deine Pausen."),
        ("L: Und, wie läuft's auf der Arbeit?",
         "T: Echt gut! {Years} Jahre {bei} inzwischen, und endlich hab ich einen Schreibtisch am "
         "Fenster. #employer",
         "L: {ha}, das ultimative Statussymbol. Was machst du da noch mal genau?",
         "T: Ich bin {role}. Nicht glamourös, aber ich mag's. #role"),
    ],
    "job_change": [
        ("T: Also... {when} war mein erster Tag {new_bei}. Ich hab's echt durchgezogen! "
         "#when,new_employer",
         "L: {wow} Du hast mir gar nicht erzählt, dass du dich beworben hast!",
         "T: Ich wollte es nicht verschreien. Ähnliche Arbeit, aber ein viel netteres Team und "
         "ein kürzerer Arbeitsweg.",
         "L: Ich freu mich so für dich. Und, erster Eindruck?",
         "T: Alle sind nett, die Einarbeitung ist Chaos. Also das Übliche."),
        ("T: Ich hab Neuigkeiten. Ich hab gekündigt.",
         "L: WAS?! Und wohin gehst du?",
         "T: {New_zu}. Angefangen hab ich {when}, und bis jetzt liebe ich es. #new_employer,when",
         "L: {wow} Großer Schritt. Glückwunsch!"),
        ("L: Wie läuft eigentlich die Jobsuche? Letztes Mal klangst du so genervt.",
         "T: Ist vorbei! {When} hab ich {new_bei} angefangen. Neuer Ausweis, neuer Laptop, alles "
         "neu. #when,new_employer",
         "L: {wow} Und, wie ist es im Vergleich zum alten Laden?",
         "T: Weniger Chaos, besserer Kaffee. Ich glaub, das war die richtige Entscheidung."),
    ],
    "home": [
        ("L: Wohnst du eigentlich noch in derselben Wohnung?",
         "T: Jep, immer noch in {city}, in {home_detail}. Die Miete ist aber schon wieder "
         "gestiegen. #city",
         "L: Boah, die Mieten sind überall der Wahnsinn."),
        ("T: Hier ist es heute Abend so laut, draußen ist irgendein Straßenfest.",
         "L: {ha}, wo wohnst du noch mal? Ich vergess das immer.",
         "T: In {city}! In {home_detail}, mitten im Geschehen. Super, bis es das nicht mehr "
         "ist. #city"),
        ("T: Ich hab den ganzen Vormittag mein Waschbecken repariert. Ich bin jetzt offiziell "
         "Handwerksprofi.",
         "L: {ha}, müsste das nicht dein Vermieter machen?",
         "T: Theoretisch. Aber in {city} ruft kein Vermieter zurück, zumindest nicht meiner. "
         "#city"),
    ],
    "move": [
        ("T: Geschafft, die letzten Kisten sind aus dem Transporter: {when} bin ich nach "
         "{new_city} gezogen! #when,new_city",
         "L: {wow} Und, wie fühlt es sich an?",
         "T: Komisch. Ich biege ständig falsch ab, wenn ich zum Supermarkt will.",
         "L: {ha}, gib dem Ganzen einen Monat. Warum noch mal genau dahin?",
         "T: {Reason} #reason"),
        ("L: Wie läuft die Wohnungssuche?",
         "T: Ist vorbei! Ich hab einen Mietvertrag in {new_city} unterschrieben und bin {when} "
         "umgezogen. {Reason} #new_city,when,reason",
         "L: {wow} Das ist echt ein großer Schritt."),
        ("T: Ich schreib dir gerade vom Küchenboden meiner neuen Wohnung in {new_city}, haha. "
         "Die Umzugsfirma war {when} da. #new_city,when",
         "L: Nee, du hast es echt durchgezogen!",
         "T: Hab ich. {Reason} #reason",
         "L: Ich komm zu Besuch, sobald du Stühle hast."),
    ],
    "pet": [
        ("T: Rate mal: {when} haben wir {a_young} nach Hause geholt! #when,species",
         "L: {wow} Welche Rasse?",
         "T: {A_breed}! {Pet_er} heißt {name} und hat das Sofa schon komplett übernommen. "
         "#breed,name",
         "L: {name}! Was für ein toller Name. Ich brauch sofort Fotos."),
        ("T: Ich hab übrigens einen neuen Mitbewohner. {When} hab ich {a_species} aus dem "
         "Tierheim geholt. #when,species",
         "L: Oh mein Gott. Und wie ist der Name?",
         "T: {name}! {Pet_er} ist {a_breed}, zumindest größtenteils, so genau wusste das "
         "Tierheim das nicht. #name,breed",
         "L: Tierheimtiere sind die besten. Willkommen in der Familie, {name}!"),
        ("L: Wie war deine Woche?",
         "T: Lebensverändernd, haha. {When} haben wir {a_breed_acc} adoptiert. Darf ich "
         "vorstellen: {name}! #when,breed,species,name",
         "L: {wow} Ich wusste nicht mal, dass ihr sucht!",
         "T: Wir auch nicht. Wir waren im Tierheim, nur mal gucken. Klassischer Fehler."),
        ("L: Warum sind auf deinem Pulli im Selfie lauter Tierhaare?",
         "T: {ha}, erwischt. {When} ist bei mir {a_species} eingezogen. #when,species",
         "L: Nicht dein Ernst! Details, bitte.",
         "T: {A_breed}, und der Name ist {name}. Totales Chaos, ich liebe es. #breed,name"),
    ],
    "sibling": [
        ("L: Wie geht's deiner Familie eigentlich so?",
         "T: Alles gut! {My_rel} {sib} hat gerade einen neuen Job angefangen, als {sib_job}. "
         "Wir sind alle mächtig stolz. #sib,sib_job",
         "L: {nice} Wo wohnt {sib} denn inzwischen?",
         "T: Immer noch in {sib_city}, in der Nähe unserer Eltern. #sib_city"),
        ("T: {My_rel} {sib} kommt am Wochenende aus {sib_city} zu Besuch, ich putze wie "
         "verrückt. #sib,sib_city",
         "L: {ha}, die klassische Besuchspanik. Was macht {sib} noch mal beruflich?",
         "T: {Sib_er} ist {sib_job}. Arbeitet viel zu viel, wie alle in unserer Familie. "
         "#sib_job"),
        ("L: Erzähl mal von deiner Familie, das hast du nie richtig gemacht.",
         "T: Na ja, da ist {my_rel} {sib}, {sib_job} in {sib_city} und der lustigste Mensch, "
         "den ich kenne. #sib,sib_job,sib_city",
         "L: Wie schön. Steht ihr euch nah?",
         "T: Sehr. Wir schreiben uns jeden Tag, meistens Memes."),
    ],
    "wedding": [
        ("T: {When} hat {my_rel} {sib} geheiratet! #when,sib",
         "L: {wow} Wie war's?",
         "T: Perfekt. Gefeiert wurde {venue}, und ich hab meine ganze Rede durchgeheult. "
         "#venue",
         "L: {ha}, ich hätte auch geheult. Glückwunsch an {sib} und {spouse}!"),
        ("L: War nicht bald die Hochzeit von {your_rel_dat}?",
         "T: Die war {when}! {Sib} und {spouse} haben {venue} Ja gesagt, und der Regen hat "
         "gehalten. #when,venue,spouse,sib",
         "L: {wow} Habt ihr getanzt?",
         "T: Bis drei Uhr morgens. Meine Füße tun immer noch weh."),
    ],
    "birth": [
        ("T: Unsere Familie ist größer geworden! {When} hat {my_rel} {sib} {a_girl} "
         "bekommen: {baby}! #when,baby,sib",
         "L: {wow} Herzlichen Glückwunsch! Wie geht's allen?",
         "T: Müde, aber gesund. {Baby} hatte {weight} und schon richtig viele Haare. #weight",
         "L: Ohhh, ich brauch ein Foto!"),
        ("L: Gibt's was Neues von {your_rel_dat}? War das Baby nicht ungefähr jetzt fällig?",
         "T: Ja!! {Baby} ist {when} auf die Welt gekommen, {tiny} mit der Nase von {sib}. "
         "#when,baby,sib",
         "L: {wow} Willkommen auf der Welt, {baby}!",
         "T: Ich plane schon, wie ich {baby_ihn} verwöhnen kann."),
    ],
    "illness": [
        ("T: Ich muss dir was erzählen, es waren harte Tage. {When} musste {my_par} ins "
         "Krankenhaus. "
         "{Condition_story} #when,condition",
         "L: {aw} Wie geht's {par_ihm} jetzt?",
         "T: Besser. {Par_er} meckert schon übers Essen, das ist ein gutes Zeichen.",
         "L: {ha}, so muss das. Alles Liebe an deine Familie."),
        ("L: Wie geht's deiner Familie?",
         "T: Ehrlich gesagt, es waren harte Wochen. {My_par} {condition_past}. #condition,when",
         "L: {aw} Das tut mir so leid. Geht's {par_ihm} gut?",
         "T: Es geht langsam bergauf. Die Ärzte sind zufrieden, also versuch ich's auch zu "
         "sein."),
    ],
    "instrument": [
        ("T: Neues Hobby: {when} hatte ich meine allererste Stunde. Ich lerne {instrument}! "
         "#when,instrument,hobby",
         "L: {wow} Seit wann bist du denn musikalisch?",
         "T: Seit nie, haha. Unterricht gibt mir {teacher}, unglaublich geduldig mit mir.",
         "L: Wie cool. Spiel mir nächstes Mal was vor!"),
        ("L: Was machst du eigentlich abends so?",
         "T: Hauptsächlich die Nachbarn nerven. Ich hab {when} angefangen, {instrument} zu "
         "lernen. #instrument,when,hobby",
         "L: {ha}, und, kannst du schon was spielen?",
         "T: {Progress}"),
    ],
    "sport": [
        ("T: Ich hab mich {when} {club} angemeldet! Das erste Training hat mich fast "
         "umgebracht. #sport,when,hobby",
         "L: {ha}, Respekt! Wie kam's dazu?",
         "T: Ich hab mich für {goal} angemeldet, also muss ich ordentlich trainieren. #goal",
         "L: Ehrgeizig! Ich feuer dich vom Sofa aus an."),
        ("L: Du wirkst in letzter Zeit so voller Energie, was ist los?",
         "T: Ich hab {when} mit dem {sport} angefangen, dreimal die Woche. Ich bin total "
         "süchtig. #sport,when,hobby",
         "L: {nice} Trainierst du auf was hin oder einfach so?",
         "T: Auf {goal}, wenn meine Knie mitmachen. #goal"),
    ],
    "sport_drop": [
        ("T: Geständnis: Ich hab mit dem {sport} aufgehört. #drop",
         "L: {aw} Aber du hast das doch so geliebt!",
         "T: Ich weiß. {Drop_reason} #reason",
         "L: Vielleicht fängst du ja irgendwann wieder an."),
        ("L: Gehst du eigentlich noch zum {sport}?",
         "T: Nee, nicht mehr, ich hab vor ein paar Wochen aufgehört. {Drop_reason} "
         "#drop,reason",
         "L: {aw} Schade, du warst so gut geworden."),
    ],
    "craft": [
        ("T: Guck mal, wie kreativ ich bin: Ich hab mich für {craft_class} {place} "
         "angemeldet. #craft,hobby",
         "L: Wie cool! Hast du schon was gemacht?",
         "T: Mein erstes Stück: {item}. Nicht perfekt, aber ich bin komisch stolz drauf. #item",
         "L: Die kleinen Macken machen es doch erst handgemacht!"),
        ("L: Was ist das eigentlich auf deinem neuen Profilbild?",
         "T: {ha}, das hab ich selbst gemacht: {item}! Ich geh jeden Donnerstag zum {craft} "
         "{place}. #item,craft,hobby",
         "L: Moment, das hast du gemacht? Ich bin beeindruckt."),
    ],
    "trip": [
        ("T: Bin zurück {from_dest}! Wir sind {when} heimgekommen. #dest,when",
         "L: {wow} Mit wem warst du noch mal da?",
         "T: Mit {companion}. Mein Highlight: {highlight}. #companion,highlight",
         "L: Ich bin so neidisch. Schick mir die besten Fotos!"),
        ("T: {When} bin ich {from_dest} zurückgekommen, {duration} waren wir dort. Mein Koffer "
         "ist immer noch halb voll. #when,dest",
         "L: {ha}, klassisch. Mit wem warst du da?",
         "T: Mit {companion}. Am schönsten war {highlight}. #companion,highlight",
         "L: Das klingt traumhaft."),
        ("L: Du warst so still! Warst du weg?",
         "T: Ja! {Duration} {in_dest}, wir sind erst {when} zurückgekommen. #dest,when",
         "L: {nice} Wer war mit?",
         "T: Ich war mit {companion} da. Mein Highlight: {highlight}. #companion,highlight"),
    ],
    "car": [
        ("T: Ich hab mir endlich ein Auto gekauft! Einen {condition_acc} {colour_acc} {model}. "
         "Abgeholt hab ich ihn {when}. #model,colour,when",
         "L: {wow} Roadtrip bald?",
         "T: Auf jeden Fall. Erst muss ich rausfinden, wofür die ganzen Knöpfe sind, haha."),
        ("T: {When} hab ich den Kaufvertrag für ein Auto unterschrieben. Ich bin jetzt "
         "offiziell erwachsen. #when",
         "L: Nicht dein Ernst! Was ist es geworden?",
         "T: Ein {colour_nom} {model}. {Condition_note} #model,colour",
         "L: {nice} Sehr erwachsen, in der Tat."),
    ],
    "car_replace": [
        ("T: Mein altes Auto ist hinüber. {Car_reason}",
         "L: {aw} Und jetzt?",
         "T: Schon erledigt: {when} hab ich mir einen {new_colour_acc} {new_model} geholt. "
         "#new_model,new_colour,when",
         "L: {ha}, das ging aber schnell. Eine Schweigeminute für das alte."),
        ("L: Ist das ein anderes Auto auf deinen Fotos?",
         "T: Ja! Ich hab mir {when} einen {new_colour_acc} {new_model} gekauft. "
         "#new_model,new_colour,when",
         "L: {wow} Was ist mit dem alten passiert?",
         "T: {Car_reason}"),
    ],
    "bike": [
        ("T: Ich hab mir {when} ein neues Fahrrad gegönnt! #when",
         "L: Ooh, was für eins?",
         "T: Ein {bike_colour} {bike} von {brand}. {Purpose} #bike,brand",
         "L: {nice} Jetzt gibt's keine Ausreden mehr."),
        ("L: Wie kommst du denn inzwischen zur Arbeit?",
         "T: Mit dem Rad! Ich hab mir {when} ein {bike} von {brand} gekauft. {Purpose} "
         "#bike,brand,when",
         "L: {nice} Sollte ich echt auch mal machen."),
    ],
    "course": [
        ("T: {When} hab ich mich für einen {course_name} {place} angemeldet, immer "
         "{day}abends. #subject,hobby,when",
         "L: Oh cool, warum {subject}?",
         "T: {Why}",
         "L: Find ich toll. Bring mir nächstes Mal was bei."),
        ("L: Du hast {day}s nie mehr Zeit, was ist da los?",
         "T: {ha}, ich hab {when} mit einem {course_name} angefangen. Mit Hausaufgaben und "
         "allem. #subject,when,hobby",
         "L: {nice} Und, wie läuft's?",
         "T: {Progress}"),
    ],
    "book": [
        ("T: Ich hab gerade „{title}“ zu Ende gelesen und bin emotional komplett fertig. #title",
         "L: {ha}, im guten Sinne? Von wem ist das?",
         "T: Von {author}. Das würde dir gefallen, es ist {pitch}. #author",
         "L: Kommt auf meine Liste."),
        ("L: Hast du in letzter Zeit was Gutes gelesen? Ich brauch was fürs Wochenende.",
         "T: Ja! „{title}“ von {author}. Konnte es nicht weglegen. #title,author",
         "L: Worum geht's?",
         "T: Es ist {pitch}. Vertrau mir."),
    ],
    "series": [
        ("T: Ich hab eine komplette Staffel {series} in zwei Tagen geschaut. Hilfe. #series",
         "L: {ha}, ist es gut?",
         "T: So gut. Es ist {pitch}."),
        ("L: Hast du Serientipps? Ich hab nichts mehr zu gucken.",
         "T: {Series}! Hab ich letzten Monat komplett durchgesuchtet. Es ist {pitch}. #series",
         "L: Okay, ich fang heute Abend an."),
    ],
    "concert": [
        ("T: {When} war ich beim Konzert von {band} und bin immer noch hin und weg. #band,when",
         "L: {wow} Wo war das?",
         "T: {Venue}. Wir standen so nah an der Bühne, ich konnte den Schweiß sehen, haha. "
         "#venue",
         "L: Eklig, aber großartig."),
        ("L: Was hast du in letzter Zeit so gemacht?",
         "T: Ich war {when} bei {band}, {venue}! #band,when,venue",
         "L: Nee, bin ich neidisch. Waren sie live gut?",
         "T: Besser als auf Platte. Ich hab vom Mitsingen keine Stimme mehr."),
    ],
    "volunteer": [
        ("T: Ich engagiere mich jetzt ehrenamtlich {org}. #org",
         "L: Wie schön! Was machst du da?",
         "T: Meistens {task}. Immer {day}vormittags. #task",
         "L: Ehrlich, das ist echt lieb von dir."),
        ("L: Hast du am {Day} Lust auf Brunch?",
         "T: Geht leider nicht! {Day}s bin ich jetzt immer {org}: {task}. #org,task",
         "L: Oh, seit wann das denn? Toll!",
         "T: Seit ein paar Wochen. Ist der schönste Teil meiner Woche."),
    ],
    "diet": [
        ("T: Kleines Lebens-Update: {when} hab ich beschlossen, ab jetzt {diet} zu essen. "
         "#diet,when",
         "L: Echt jetzt? Wie kam's?",
         "T: {Diet_reason}",
         "L: Respekt. Ich weiß nicht, ob ich das schaffen würde."),
        ("L: Wollen wir nächstes Mal, wenn ich da bin, in den neuen Burgerladen?",
         "T: {ha}, apropos: {when} hab ich umgestellt, ich esse jetzt {diet}. {Diet_reason} "
         "#diet,when",
         "L: Oh! Okay, ich such was mit guten Optionen raus."),
    ],
    "project": [
        ("T: Update von der Arbeit: Ich bin jetzt für {project} zuständig. #project",
         "L: {nice} Klingt wichtig!",
         "T: Ist es, und die Deadline ist brutal. {Project_detail}"),
        ("L: Wie läuft's auf der Arbeit?",
         "T: Chaos. Ich leite gerade {project}, und das frisst meine Abende. #project",
         "L: Oh Mann. Wann ist es vorbei?",
         "T: {Project_detail}"),
    ],
    "injury": [
        ("T: Nicht lachen: Ich hab mir {when} {injury_acc} {injured_pp}. #injury,when",
         "L: {aw} Wie das denn?!",
         "T: Ich bin {cause}. Sehr elegant. #cause",
         "L: Autsch. Wie lange dauert es, bis das verheilt ist?",
         "T: {Treatment}"),
        ("L: Du warst so still, alles okay?",
         "T: Geht so. Ich hab mir {when} {injury_acc} {injured_pp}. Bin {cause}, wie so ein "
         "Trottel. #injury,when,cause",
         "L: {aw} Brauchst du irgendwas?",
         "T: {Treatment}"),
    ],
    "single": [
        ("L: Und, datest du gerade jemanden?",
         "T: Nö, immer noch Single, und ehrlich? Ich find's ziemlich gut. #single",
         "L: {ha}, recht hast du."),
        ("T: Meine Mutter hat beim Essen schon wieder gefragt, wann ich endlich mal jemanden "
         "mitbringe.",
         "L: {ha}, der Klassiker. Und? Jemand in Sicht?",
         "T: Niemand. Ich bin Single und damit völlig zufrieden, danke schön. #single"),
    ],
    "partnered": [
        ("T: {Partner} und ich sind jetzt seit {years} Jahren zusammen, kannst du dir das "
         "vorstellen? #partner,years",
         "L: {wow} Wie die Zeit vergeht. Habt ihr was Großes geplant?",
         "T: Nur ein schönes Abendessen. Wir sind keine großen Feierer."),
        ("T: {Partner} hat heute Abend gekocht und zweimal den Rauchmelder ausgelöst. #partner",
         "L: {ha}, wie lange seid ihr eigentlich schon zusammen?",
         "T: {Years} Jahre. Lang genug, dass ich die guten Pfannen verstecke. #years"),
    ],
    "partner_new": [
        ("T: Okay, ich hab Klatsch. Über mich.",
         "L: Erzähl...",
         "T: Ich hab jemanden kennengelernt. {Partner}. Wir haben uns {when} {where_met} "
         "getroffen und waren seitdem viermal aus. #partner,where_met,when",
         "L: {wow} Ich will ALLES wissen."),
        ("L: Du wirkst in letzter Zeit so glücklich. Was ist los?",
         "T: {ha}, merkt man das so? Ich date jemanden. {Partner_er} heißt {partner}, wir "
         "haben uns {when} {where_met} kennengelernt. #partner,where_met,when",
         "L: {wow} Ich freu mich so für dich!",
         "T: Ist noch ganz frisch, aber fühlt sich gut an."),
    ],
    "engaged": [
        ("T: Ich muss dir was Großes erzählen. {Partner} hat mir {when} einen Antrag gemacht! "
         "#when",
         "L: {wow} GLÜCKWUNSCH!! Wie ist es passiert?",
         "T: {Proposal}, und den Ring hatte {partner_er} einen ganzen Monat in einer Socke "
         "versteckt. #proposal",
         "L: {ha}, die Socke ist das Beste. Ich freu mich so für euch."),
        ("L: Moment, ist das ein Ring auf deinem Foto?!",
         "T: Ja! {Partner} und ich haben uns {when} verlobt. {Proposal}. #when,proposal",
         "L: {wow} Ich schreie. Herzlichen Glückwunsch!"),
    ],
}

CALLBACKS = {
    "diet": [
        ("T: Ich hab ein super Rezept gefunden, das zu meiner neuen Ernährung passt. Sogar "
         "meine skeptischen Freunde mochten es.",
         "L: Schick mal rüber!"),
    ],
    "course": [
        ("T: Ich hatte gestern Hausaufgaben für meinen Kurs. Ich fühl mich wie ein Teenager.",
         "L: {ha}, hast du sie gemacht?",
         "T: Im Bus, fünf Minuten vor dem Unterricht."),
    ],
    "bike": [
        ("T: Bin heute mit dem neuen Rad durch den Regen gefahren. Reue.",
         "L: {ha}, Schutzbleche sind die Lösung."),
    ],
    "book": [
        ("L: Hast du nach dem Buch, das du so geliebt hast, was Neues angefangen?",
         "T: Nichts kommt ran. Ich stecke in einer totalen Leseflaute."),
    ],
    "series": [
        ("T: Ich schau die Serie, die ich durchgesuchtet hab, schon wieder von vorne.",
         "L: {ha}, null Selbstbeherrschung."),
    ],
    "pet": [
        ("T: {Name} hat heute ein ganzes Brötchen vom Tisch geklaut. Ich kann {pet_ihm} nicht "
         "mal böse sein.",
         "L: {ha}, {pet_er} weiß genau, was {pet_er} tut."),
        ("L: Und, was macht {name}?",
         "T: Wächst wie verrückt und schläft jede Nacht auf meinem Kopfkissen. Hilfe."),
        ("T: Heute Morgen war ich mit {name} beim Tierarzt. Alles gut, aber {pet_er} hat sich "
         "die ganze Zeit unter dem Stuhl versteckt.",
         "L: Das arme Ding! Tierärzte sind aber auch gruselig."),
        ("T: {Name} hat gelernt, die Badezimmertür aufzumachen. Kein Witz.",
         "L: {ha}, du bist verloren."),
        ("L: Hasst {name} immer noch den Staubsauger?",
         "T: Aus tiefstem Herzen. {Pet_er} greift ihn jedes Mal an, haha."),
    ],
    "instrument": [
        ("T: Hab heute eine Stunde geübt, meine Finger bringen mich um.",
         "L: Ohne Fleiß kein Preis! Beschweren sich die Nachbarn schon?",
         "T: Nur einer. Die andere klatscht, haha."),
        ("L: Wie läuft's mit dem Musikunterricht?",
         "T: Langsam! Ich höre ständig 'stetige Fortschritte', was glaub ich höflich für "
         "'immer noch schlecht' ist."),
        ("T: Ich hab heute im Unterricht ein ganzes Stück durchgespielt, ohne anzuhalten!",
         "L: {wow} Ein Meilenstein!",
         "T: Es war ein sehr langsames Stück. Aber trotzdem."),
    ],
    "sport": [
        ("T: Das Training heute Morgen war brutal. Meine Beine sind Wackelpudding.",
         "L: {ha}, du hast dir das selbst ausgesucht!"),
        ("L: Wie läuft das Training?",
         "T: Gut! Ich hab diese Woche meine Bestleistung geknackt, ich war so stolz."),
        ("T: Muskelkater an Stellen, von denen ich nicht wusste, dass es da Muskeln gibt.",
         "L: {ha}, heißt, es wirkt."),
    ],
    "craft": [
        ("T: Heute im Kurs wieder was gemacht. Es ist schief, aber es ist meins.",
         "L: Schief und stolz!"),
        ("L: Hast du im Kurs was Neues gemacht?",
         "T: Ein Geschenk für meine Nachbarin. Sie hat so getan, als fände sie es toll. "
         "Die netteste Lüge überhaupt."),
    ],
    "trip": [
        ("T: Ich zehre ehrlich gesagt immer noch von den Urlaubsfotos.",
         "L: Geht mir auch so, die guck ich mir an, wenn die Arbeit nervt."),
        ("T: Ich hab heute Sand in meinem Koffer gefunden. Wochen später.",
         "L: {ha}, das Souvenir, das keiner will."),
        ("L: Planst du schon die nächste Reise?",
         "T: Führ mich nicht in Versuchung. Ich hab zwölf Tabs offen."),
    ],
    "car": [
        ("T: Das Auto hat heute auf der Autobahn ein furchtbares Geräusch gemacht.",
         "L: {aw} Oh oh. Ab in die Werkstatt?",
         "T: Sieht so aus. Da geht mein Wochenende hin."),
        ("T: Jemand hat so dicht neben meinem Auto geparkt, dass ich über die Beifahrerseite "
         "einsteigen musste.",
         "L: Klassiker. Hast du einen Zettel hinterlassen?",
         "T: Ich hab einen geschrieben und mich dann nicht getraut."),
    ],
    "job": [
        ("T: Mein Chef will die Quartalszahlen bis morgen. Ich hab noch nicht mal angefangen. "
         "Haha.",
         "L: {aw} Das ist fies."),
        ("T: Langer Tag auf der Arbeit. Ich lieg auf dem Sofa und beweg mich nicht mehr.",
         "L: Verdient. Bestell dir was."),
        ("T: Wir haben neue Stühle auf der Arbeit bekommen. Die Stimmung ist auf dem "
         "Höhepunkt, haha.",
         "L: {ha}, die kleinen Dinge!"),
    ],
    "partnered": [
        ("T: {Partner} macht gerade Pfannkuchen, das Leben ist schön.",
         "L: {ha}, gut festhalten!"),
        ("T: {Partner} und ich waren im Escape Room. Verloren, aber wir sind noch zusammen, "
         "haha.",
         "L: Das ist der wahre Test!"),
        ("L: Wie geht's {partner}?",
         "T: Gut! {Partner_er} lernt gerade Brot backen, unsere Küche ist voller Mehl."),
    ],
    "partner_new": [
        ("L: Wie läuft's mit {partner}?",
         "T: Richtig gut. {Partner_er} hat am Samstag meine Freunde kennengelernt, und alle "
         "sind begeistert."),
        ("T: {Partner} hat gestern für mich gekocht. Ich glaub, das ist was Ernstes.",
         "L: {ha}, festhalten!"),
        ("T: {Partner} und ich waren am Sonntag wandern. Wir haben uns verlaufen, aber es war "
         "schön.",
         "L: Sich gemeinsam verlaufen ist ein gutes Zeichen!"),
    ],
    "sibling": [
        ("T: {Sib} hat angerufen, wir haben zwei Stunden gequatscht. Mein Ohr glüht.",
         "L: {ha}, Geschwistertelefonate sind die besten."),
        ("L: Wie geht's {sib}?",
         "T: Viel zu tun, wie immer. {Sib_er} hat versprochen, bald zu Besuch zu kommen, mal "
         "sehen."),
    ],
    "engaged": [
        ("T: Die Hochzeitsplanung macht mich jetzt schon fertig, dabei haben wir noch nicht mal "
         "ein Datum.",
         "L: {ha}, brennt doch einfach durch!"),
        ("L: Gibt's schon ein Datum für die Hochzeit?",
         "T: Nächsten Sommer, wahrscheinlich. Wir streiten noch über die Gästeliste."),
    ],
    "birth": [
        ("T: Hab zum ersten Mal babygesittet. Überlebt. Knapp.",
         "L: {ha}, war's süß?",
         "T: Extrem. Und extrem laut."),
        ("T: Ich hab ein Video bekommen, wie das Baby lacht. Ich hab's dreißigmal angeschaut.",
         "L: Schick's mir!"),
    ],
    "volunteer": [
        ("T: Das Ehrenamt war diese Woche richtig schön, jemand hat Kuchen mitgebracht.",
         "L: Ach, wie lieb."),
        ("T: Hatte heute Morgen meine Ehrenamtsschicht. Kaputt, aber glücklich.",
         "L: Die beste Art von müde."),
    ],
    "project": [
        ("T: Das große Projekt auf der Arbeit bewegt sich endlich. Langsam, aber immerhin.",
         "L: Fortschritt ist Fortschritt!"),
        ("T: Update zum großen Ding auf der Arbeit: Wir haben die erste Deadline geschafft! "
         "Knapp.",
         "L: Knapp zählt!"),
    ],
    "illness": [
        ("L: Wie geht's {your_par_dat}?",
         "T: Viel besser, danke der Nachfrage. {Par_er} kommandiert schon wieder alle herum."),
        ("T: {My_par} hat diese Woche mit der Reha angefangen. Es geht langsam bergauf.",
         "L: Wie schön, das zu hören."),
    ],
    "injury": [
        ("T: Heute wieder Physio. Es wird langsam.",
         "L: Dranbleiben, du schaffst das."),
        ("T: Ich kann endlich wieder laufen, ohne das Gesicht zu verziehen. Kleine Siege.",
         "L: {wow} Fortschritt!"),
    ],
    "home": [
        ("T: Die Nachbarn haben bis drei Uhr nachts gefeiert. Ich war nicht eingeladen, aber "
         "definitiv dabei, haha.",
         "L: {ha}, dünne Wände?"),
        ("T: Mein Vermieter hat endlich die Heizung repariert. Hat nur einen Monat gedauert.",
         "L: {ha}, ein Wunder."),
    ],
    "move": [
        ("T: Ich hab endlich ein gutes Café in der Nähe meiner neuen Wohnung gefunden. Jetzt "
         "fühl ich mich zu Hause.",
         "L: Der wichtigste Schritt!"),
        ("T: Ich hab immer noch drei ungeöffnete Kisten. Ich weiß nicht mal, was drin ist.",
         "L: {ha}, dann brauchst du's auch nicht!"),
    ],
}

TOPICS = {
    "pet": [
        ("T: Mal ehrlich: Glaubst du, Hunde träumen? Ich hab ein Video gesehen, wie ein Hund "
         "im Schlaf rennt.",
         "L: Auf jeden Fall. Katzen auch, die zucken ständig."),
        ("T: Gestern lief eine Doku über Tierheime. Ich hab zweimal geweint.",
         "L: Die sollten echt mit einer Warnung kommen."),
        ("L: Die Katze von meinen Nachbarn besucht mich jetzt jeden Morgen. Ich glaub, sie "
         "betrügt die.",
         "T: {ha}, Katzen machen halt, was sie wollen."),
    ],
    "trip": [
        ("T: Bist du eher für Strandurlaub oder Städtetrips?",
         "L: Städtetrips. Am Strand langweile ich mich nach einem Tag.",
         "T: Geht mir genauso, ich brauch Museen und gutes Essen."),
        ("L: Die Flüge sind dieses Jahr so teuer, das ist lächerlich.",
         "T: Frag mich mal. Ich schau ständig nach, und nichts wird billiger."),
    ],
    "sport": [
        ("T: Hast du gesehen, dass Leute jetzt Marathons im Kostüm laufen?",
         "L: {ha}, ich hab mal einen gesehen, der als Banane gelaufen ist."),
    ],
    "instrument": [
        ("L: Ich hab meine alte Blockflöte aus der Schule in einer Kiste gefunden. Ich bin "
         "versucht, wieder anzufangen.",
         "T: {ha}, bitte nicht."),
    ],
    "job": [
        ("T: Denkst du manchmal drüber nach, was du in einem anderen Leben beruflich machen "
         "würdest?",
         "L: Bäckerei. Früh aufstehen, aber den ganzen Tag Brot.",
         "T: {ha}, ich wär Leuchtturmwärter. Keine E-Mails."),
    ],
    "car": [
        ("T: Der Sprit ist schon wieder so teuer.",
         "L: Ich weiß. Alle, die ich kenne, reden über E-Autos."),
    ],
    "book": [
        ("L: Liest du auf Papier oder auf dem Bildschirm?",
         "T: Papier. Ich muss die Seiten riechen, haha."),
    ],
    "series": [
        ("T: Es gibt zu viele Serien. Ich verbringe mehr Zeit mit Aussuchen als mit Gucken.",
         "L: So wahr. Mein halber Abend ist Durchscrollen."),
    ],
    "move": [
        ("T: Die Wohnungspreise sind überall verrückt geworden.",
         "L: Ich weiß. Ich kenne Leute, die die Hälfte ihres Gehalts für Miete ausgeben."),
    ],
    "single": [
        ("L: Meine Cousine hat ihren Freund über eine App kennengelernt. Das ist jetzt total "
         "normal.",
         "T: Ja, in Bars lernt sich keiner mehr kennen."),
    ],
    "wedding": [
        ("T: Hochzeiten sind heutzutage so teuer.",
         "L: Oder? Ich würde lieber eine große Party im Garten machen."),
    ],
    "course": [
        ("L: Ich sag seit Jahren, dass ich eine Sprache lerne. Vielleicht nächstes Jahr.",
         "T: Das sagen alle. Ich auch, bevor ich angefangen hab."),
    ],
    "diet": [
        ("T: Ich hab versucht, Brot selbst zu backen. Raus kam ein Ziegelstein.",
         "L: {ha}, Brot ist schwer! Nimm es als Türstopper."),
    ],
    "concert": [
        ("L: Konzertkarten kosten inzwischen ein Vermögen.",
         "T: Ich weiß. Ich vermisse die Zeiten, als ein Konzert zwanzig Euro gekostet hat."),
    ],
}

HINTS = {
    "job_change": [
        ("T: Kann ich dir ein Geheimnis erzählen? Ich hab mich woanders beworben.",
         "L: Ooh! Was Vielversprechendes dabei?",
         "T: Ein Vorstellungsgespräch lief richtig gut. Daumen drücken."),
        ("T: Ich hatte heute ein Vorstellungsgespräch. Nicht weitersagen!",
         "L: {wow} Meine Lippen sind versiegelt. Wie lief's?",
         "T: Ich glaub gut? Mal sehen."),
    ],
    "move": [
        ("T: Ich schau mir gerade Wohnungen in anderen Städten an. Nur gucken.",
         "L: Moment, überlegst du umzuziehen?",
         "T: Vielleicht. Ich erzähl's dir, wenn ich mehr weiß."),
        ("T: Mein Vermieter erhöht schon wieder die Miete. Ich glaub, es ist Zeit zu gehen.",
         "L: {aw} Und wohin?",
         "T: Keine Ahnung. Ich schau mich um."),
    ],
    "car_replace": [
        ("T: Das Auto macht wieder dieses Geräusch. Ich glaub, es stirbt.",
         "L: {aw} Lässt du es reparieren?",
         "T: Kommt drauf an, was die Werkstatt sagt."),
        ("T: Die Motorkontrollleuchte ist schon wieder an. Zum dritten Mal diesen Monat.",
         "L: Das klingt nicht gut.",
         "T: Ich schau mir abends schon Autoanzeigen an. Nur gucken."),
    ],
    "partner_new": [
        ("T: Ich hatte letzte Woche ein Date. Mehr verrate ich noch nicht.",
         "L: WAS. Das kannst du doch nicht einfach so sagen!",
         "T: {ha}, kann ich wohl."),
        ("T: Eine Freundin will mich unbedingt verkuppeln. Vielleicht sag ich diesmal ja.",
         "L: Mach's! Was soll schon passieren?",
         "T: Frag lieber nicht, ich hab eine Liste."),
    ],
    "sport_drop": [
        ("T: Ehrlich gesagt fühlt sich das Training in letzter Zeit wie eine Pflicht an.",
         "L: Vielleicht brauchst du eine Pause?",
         "T: Vielleicht. Mal sehen, wie es mir nächsten Monat geht."),
        ("T: Ich hab diesen Monat dreimal das Training geschwänzt. Kein gutes Zeichen.",
         "L: Jeder braucht mal eine Pause.",
         "T: Ich weiß. Ich hab einfach keine Lust mehr."),
    ],
}

OPENERS = {
    "soon": [
        ("T: Hey {lname}! Wie läuft deine Woche?", "L: Hey! Ganz gut, bisschen müde. Und bei dir?"),
        ("T: Hi! Hast du kurz Zeit?", "L: Für dich immer. Was gibt's?"),
        ("T: Na du, alles im Griff?", "L: Gerade so, haha. Hi!"),
        ("T: Hey! Wie geht's so?", "L: Alles gut, ruhige Woche. Und bei dir?"),
        ("T: Hey hey. Passt es gerade?", "L: {ha}, perfekt, ich prokrastiniere eh."),
        ("T: Hey {lname}, was machst du so?", "L: Bin gerade heimgekommen. Perfektes Timing."),
        ("T: Okay, ich hab ein paar Minuten. Wie geht's dir?",
         "L: Gut! Besser, seit ich Feierabend hab."),
        ("T: Hey! Was gibt's Neues?", "L: Nicht viel, ehrlich gesagt. Erzähl du zuerst."),
        ("T: Hi! Zeit zum Quatschen?", "L: Ja! Ich mach mir gerade Tee."),
        ("T: Hi {lname}! Wie war dein Tag?", "L: Lang, aber okay. Und deiner?"),
        ("T: Hey! Kurze Pause auf der Arbeit, da dachte ich, ich sag mal Hallo.",
         "L: Hi! Gutes Timing."),
        ("T: Klopf, klopf. Jemand da?", "L: {ha}, hier! Was gibt's?"),
        ("T: Hey! Wie läuft's so?", "L: Ganz gut! Viel zu tun, aber gut. Und bei dir?"),
    ],
    "later": [
        ("T: {lname}! Ewig nichts gehört, wie geht's dir?",
         "L: Ich weiß, sorry! Es war so viel los. Mir geht's gut, und dir?"),
        ("T: Hey, lange nichts gehört!",
         "L: Hey! Ich hab gerade an dich gedacht. Wie geht's dir?"),
        ("T: Hi! Ich hab das Gefühl, wir haben ewig nicht geredet.",
         "L: Haben wir auch nicht! Wir müssen so viel nachholen."),
        ("T: Hallooo, lebst du noch?", "L: {ha}, gerade so! Sorry, dass ich abgetaucht bin."),
        ("T: Hey, sorry für die Funkstille, die letzten Wochen waren Chaos.",
         "L: Kein Stress, bei mir genauso. Wie geht's dir?"),
        ("T: Gefühlt eine Ewigkeit! Was hab ich verpasst?", "L: So viel. Wo fang ich an?"),
        ("T: Hey! Ich schulde dir mal ein richtiges Update.",
         "L: Allerdings! Wie geht's dir?"),
        ("T: Sorry, dass ich so still war. Wie geht's dir?", "L: Kein Ding! Mir geht's gut. Dir?"),
    ],
    "evening": [
        ("T: Hallöchen. Kurz quatschen, bevor ich einschlafe?", "L: Klar! Wie war dein Tag?"),
        ("T: Noch wach?", "L: Leider, haha. Was gibt's?"),
        ("T: Guten Abend! Endlich auf dem Sofa.", "L: Ich auch! Langer Tag?"),
    ],
}

_LEAVING = ("Okay, ich muss los, mein Essen brennt an.",
            "Mein Akku ist gleich leer, später weiter?",
            "Okay, zurück an die Arbeit.", "Lass uns bald wieder quatschen, ja?",
            "Alles klar, ich muss los. Viel Erfolg diese Woche!",
            "Es klingelt an der Tür, ich muss!", "Ich muss in einen Call. Bis später!",
            "Okay, die Erledigungen rufen. Bis bald!", "Ich muss los, die Wäsche ist fertig.",
            "Ich muss jetzt los, aber das war schön.")
_BYE = ("Tschüss! Bis bald.", "Mach's gut, bis bald!", "Bis dann! Hab einen schönen Tag.",
        "Klar, ciao! War schön.", "Los, los! Bis später.", "Okay, tschüss! Grüß alle von mir.")
_GOOD_NIGHT = ("Ich muss Schluss machen, morgen geht's früh los. Gute Nacht!",
               "Ich sollte schlafen gehen. War schön!",
               "Ich schlaf gleich auf dem Sofa ein. Nacht!",
               "Zeit fürs Bett. Nacht!")
_NIGHT = ("Gute Nacht! Bis bald.", "Schlaf gut! Vielleicht bis morgen.",
          "Gute Nacht! Träum was Schönes.", "{ha}, ab ins Bett! Nacht!")
CLOSERS = {
    "any": [(f"T: {leaving}", f"L: {bye}") for leaving in _LEAVING for bye in _BYE],
    "evening": [(f"T: {leaving}", f"L: {night}") for leaving in _GOOD_NIGHT for night in _NIGHT],
}

FILLER = [
    ("T: {weather}", "L: {weather_reply}"),
    ("L: Wie ist das Wetter bei dir?", "T: {weather}", "L: {weather_reply}"),
    ("T: Mir ist gerade aufgefallen, dass ich heute schon vier Kaffee hatte und immer noch "
     "müde bin.",
     "L: {ha}, vielleicht hilft der fünfte."),
    ("T: Hast du den neuen Podcast gehört, über den alle reden?",
     "L: Den True-Crime-Podcast? Ich bin bei Folge vier und kann nicht aufhören.",
     "T: Ich auch. Ich hör ihn beim Abwaschen, meine Küche war noch nie so sauber."),
    ("L: Was gab's bei dir zum Abendessen?", "T: {dinner}", "L: {dinner_reply}"),
    ("T: Rate mal, was es bei mir zum Abendessen gab.", "L: Erzähl.", "T: {dinner}"),
    ("T: {small_win}", "L: {small_win_reply}"),
    ("T: Kleiner Sieg des Tages: {small_win}", "L: {small_win_reply}"),
    ("T: {annoyance}", "L: {annoyance_reply}"),
    ("T: Darf ich mich kurz beschweren? {annoyance}", "L: {annoyance_reply}"),
    ("L: Was machst du dieses Wochenende?", "T: {weekend_plan}", "L: {weekend_reply}"),
    ("T: Mein Internet war zwei Tage weg, und ich hab ein echtes Buch gelesen.",
     "L: Wie furchtbar. Hast du's überlebt?"),
    ("T: Ich bin gestern um neun ins Bett gegangen. Ich bereue nichts.",
     "L: {ha}, der Traum."),
    ("L: Die Preise im Supermarkt werden echt lächerlich.",
     "T: Ich weiß! Ich hab vier Euro für eine winzige Schale Trauben bezahlt.",
     "L: Trauben sind jetzt Luxusgüter."),
    ("T: Heute Morgen saß eine Spinne im Bad, so groß wie meine Hand.",
     "L: Nope. Ausziehen.",
     "T: {ha}, hab ich kurz überlegt."),
    ("T: Ich hab gestern ein neues Rezept ausprobiert, so ein Zitronen-Pasta-Ding.",
     "L: Ooh, hat's geklappt?",
     "T: Überraschend gut. Ich schick dir das Rezept."),
    ("L: Was hast du am Wochenende vor?", "T: {weekend_plan}", "L: {weekend_reply}"),
    ("T: Ich hab meinen Kleiderschrank ausgemistet und ein Shirt gefunden, das ich nie "
     "getragen hab. Etikett noch dran.",
     "L: {ha}, gratis neues Shirt!"),
    ("T: Mein Handydisplay ist schon wieder gesprungen. Zum dritten Mal dieses Jahr.",
     "L: {aw} Hol dir eine bessere Hülle!",
     "T: Ich weiß, ich weiß."),
    ("L: Sitzt du nach der Arbeit auch manchmal zehn Minuten einfach nur in der Jacke auf dem "
     "Sofa?",
     "T: Jeden Tag. Das ist meine ruhige Zeit."),
    ("T: Die Schlange bei der Post war heute die längste, die ich je gesehen hab.",
     "L: Warum arbeitet da eigentlich immer nur eine Person?"),
    ("T: Ich schlafe in letzter Zeit so schlecht.",
     "L: {aw} Kein Handy vorm Schlafen. Sagt die Person, die um Mitternacht schreibt.",
     "T: {ha}, genau."),
    ("L: Ich hab endlich die quietschende Tür repariert. Hat nur drei Monate gedauert.",
     "T: {ha}, ein echter Held."),
    ("T: Jemand in meinem Haus spielt den ganzen Tag dasselbe Lied in Dauerschleife.",
     "L: Welches denn?",
     "T: Keine Ahnung. Ich summe es inzwischen im Schlaf."),
    ("T: Ich war heute Morgen in einem neuen Café. Die Croissants sind unglaublich.",
     "L: Okay, jetzt hab ich Hunger."),
    ("L: Ich hab meinen ganzen Samstag mit Wäsche und Kochvideos verbracht.",
     "T: Klingt ehrlich gesagt nach einem perfekten Samstag."),
    ("T: Ich hab einen Strafzettel bekommen, während ich am Automaten das Parkticket "
     "gezogen hab.",
     "L: Nein! Wie unfair.",
     "T: Ich leg aus Prinzip Widerspruch ein."),
    ("L: Bist du eher Morgenmensch oder Nachteule?",
     "T: Nachteule, immer. Morgen sind Betrug.",
     "L: {ha}, sehe ich genauso."),
    ("T: Ich hab mir eine Pflanze gekauft. Mal sehen, wie lange sie überlebt.",
     "L: {ha}, viel Glück der Pflanze."),
    ("L: Ich versuche, mehr Wasser zu trinken. Schwieriger, als es klingt.",
     "T: Ich stell mir dafür Wecker. Funktioniert so halb."),
    ("T: Gestern Abend war drei Stunden lang der Strom weg.",
     "L: Was hast du gemacht?",
     "T: Kerzen und Brettspiele. War eigentlich richtig schön."),
    ("T: Hast du gestern den Mond gesehen? Der war riesig.",
     "L: Ja! Ich wollte ein Foto machen, aber drauf war nur ein winziger Punkt."),
    ("L: Ich puzzle wieder. Tausend Teile.",
     "T: Ooh, was ist drauf?",
     "L: Eine Bibliothek voller Bücher. Jedes Teil ist braun."),
    ("T: Im Arbeitschat sind heute lauter Kuchen-Emojis. Jemand hat Geburtstag, und ich weiß "
     "nicht, wer.",
     "L: {ha}, schick einfach auch einen Kuchen."),
    ("L: Hast du schon mal Pizzateig selbst gemacht?",
     "T: Einmal. Er klebte an allem, auch an mir."),
    ("T: Meine Nachbarin hat mir einen riesigen Beutel Zucchini aus ihrem Garten geschenkt.",
     "L: Zeit für Zucchinibrot!",
     "T: Das ist der Plan."),
    ("T: Ich hör den ganzen Tag alte Lieder aus der Schulzeit.",
     "L: {ha}, Nostalgie-Modus. Welche denn?",
     "T: Alle peinlichen."),
    ("L: Ich hab heute aus Versehen auf 'Allen antworten' an die ganze Firma geklickt.",
     "T: Oh nein. Was stand drin?",
     "L: Nur 'lol'. Bisher hat's keiner erwähnt. Bisher."),
    ("T: Ich versuche, wieder Tagebuch zu schreiben.",
     "L: Hab ich auch mal probiert. Hat vier Tage gehalten.",
     "T: Ich bin bei Tag drei, also drück mir die Daumen."),
    ("L: Was war das Schönste, was dir diese Woche passiert ist?",
     "T: Hmm. Zwanzig Euro in einer alten Jacke gefunden. Und bei dir?",
     "L: Ein richtig gutes Brötchen."),
    ("T: Ich hab heute Morgen versucht zu meditieren. Ich hab die ganze Zeit ans Mittagessen "
     "gedacht.",
     "L: {ha}, zählt trotzdem."),
    ("L: Was guckst du gerade so?",
     "T: Hauptsächlich Kochshows. Die sind komischerweise total entspannend.",
     "L: Geht mir auch so! Kochen kann ich nicht, aber bewerten."),
    ("T: Mein Nachbar über mir lernt Steppen. Nachts.",
     "L: Oh nein.",
     "T: Oh doch."),
    ("T: Ich hab endlich den Kühlschrank ausgemistet. Da war ein Joghurt vom letzten Jahr.",
     "L: {ha}, ein edler Jahrgang."),
    ("L: Hast du schon Pläne für deinen Geburtstag?",
     "T: Kuchen und ein Mittagsschlaf. Vielleicht beides gleichzeitig."),
    ("T: Der Supermarkt hat alles umgeräumt. Ich hab zwanzig Minuten die Nudeln gesucht.",
     "L: Das machen die mit Absicht, ich schwör's."),
    ("T: Ich versuche, früher aufzustehen. Tag eins lief super. Tag zwei eher nicht.",
     "L: {ha}, es gibt ja noch Tag drei."),
    ("L: Ich hab eine super Bäckerei um die Ecke von der Arbeit entdeckt.",
     "T: Gefährlich. Wie oft warst du diese Woche schon da?",
     "L: Reden wir nicht drüber."),
    ("T: Ich hab endlich alle Fotos vom letzten Jahr sortiert. Hat den ganzen Abend gedauert.",
     "L: Beeindruckend. Bei mir herrscht da pures Chaos."),
    ("T: Heute stand eine ganze Kiste mit Büchern zum Mitnehmen auf der Straße.",
     "L: Hast du welche mitgenommen?",
     "T: Vier. Ich hab keinen Platz. Bereue nichts."),
    ("L: Meine Mutter hat Emojis entdeckt. Sie benutzt für alles das weinende.",
     "T: {ha}, auch bei guten Nachrichten?",
     "L: Vor allem bei guten Nachrichten."),
    ("T: Ich hab am Wochenende beim Grillen bei Freunden viel zu viel gegessen.",
     "L: Dafür ist Grillen doch da."),
    ("T: Ich versuche, mehr zu lesen und weniger zu scrollen.",
     "L: Und, wie läuft's?",
     "T: Ich lese gerade, wie man weniger scrollt. Auf dem Handy."),
    ("L: Der Kellner hat 'Guten Appetit' gesagt, und ich hab 'Danke, gleichfalls' geantwortet.",
     "T: {ha}, das ist uns allen schon passiert."),
    ("T: Meine Kaffeemaschine ist heute Morgen kaputtgegangen. Schlimmster Start in den Tag.",
     "L: {aw} Notfall! Hast du überlebt?",
     "T: Instantkaffee. Knapp."),
    ("T: Hast du gehört, dass in der Innenstadt ein neues Naturkundemuseum aufmacht?",
     "L: Ja! Da will ich unbedingt hin."),
    ("L: Ich hab aus Versehen einen Newsletter abonniert und krieg jetzt zehn Mails am Tag.",
     "T: Abbestellen! Sei frei!"),
    ("T: Ich hab eine Stunde lang eine neue Handyhülle ausgesucht. Eine Stunde.",
     "L: {ha}, wichtige Entscheidungen."),
    ("L: Was für ein langer Tag.",
     "T: Das sind die Tage, an denen man Pizza bestellt."),
    ("T: Ich hab endlich einen Zahnarzttermin gemacht. Erwachsensein.",
     "L: Stolz auf dich. Ich drück mich seit einem Jahr davor."),
]

SEASONS = {
    "winter": [("Es schneit schon wieder. Ich geh heute nicht mehr raus.",
                "Klingt nach einem Decke-und-Tee-Tag."),
               ("Es ist so kalt, dass mein Türschloss heute Morgen eingefroren war.",
                "Haha, Föhn hilft immer."),
               ("Es wird schon um halb fünf dunkel. Ich hasse es.",
                "Geht mir genauso. Ich will einfach Winterschlaf halten."),
               ("Grau, grau, grau. Wann ist der Winter endlich vorbei?",
                "Nie, anscheinend. Halt durch.")],
    "spring": [("Die Bäume vor meinem Fenster haben endlich wieder Blätter.",
                "Endlich! Frühling ist das Beste."),
               ("Es regnet ununterbrochen, aber immerhin ist es warmer Regen.",
                "Haha, den Optimismus brauch ich."),
               ("Die Sonne scheint! Zum ersten Mal dieses Jahr ohne Jacke.",
                "Genieß es! Hier ist es noch frisch."),
               ("Mein Heuschnupfen bringt mich jetzt schon um.",
                "Oh nein. Die Pollenzeit ist brutal.")],
    "summer": [("Es ist so heiß, dass ich vor dem Ventilator zu Abend esse.",
                "Geht mir genauso. Ich wohne quasi unter der Dusche."),
               ("Hier war gestern Nacht ein riesiges Gewitter.",
                "Die sind so unheimlich! War der Strom weg?"),
               ("Ich lebe gerade von Eiskaffee und Wassereis.", "Haha, die Sommerdiät."),
               ("Die Hitze ist unfassbar. Meine Wohnung ist ein Backofen.",
                "Setz dich in den Supermarkt, da gibt's Klimaanlage.")],
    "autumn": [("Die Blätter färben sich, es ist gerade so schön hier.",
                "Wie schön. Herbst ist die beste Jahreszeit."),
               ("Es schüttet schon wieder. Pulli-Saison, schätze ich.",
                "Perfekte Ausrede für Suppe."),
               ("Heute Morgen war es zum ersten Mal richtig kalt, ich konnte meinen Atem sehen.",
                "Jetzt schon? Der Winter kommt."),
               ("Den ganzen Tag Sturm, mein Regenschirm ist einen Heldentod gestorben.",
                "Haha, RIP Regenschirm.")],
}

SINGLE_HOP = {
    "job": [Ask("Was macht {X} beruflich?", ("role",), "{X} ist {role}."),
            Ask("Bei welchem Arbeitgeber ist {X} beschäftigt?", ("employer",), "{employer}",
                "current")],
    "job_change": [Ask("Für wen arbeitet {X} inzwischen?", ("new_employer",),
                       "{new_employer}", "current")],
    "home": [Ask("In welcher Stadt lebt {X}?", ("city",), "{city}", "current")],
    "move": [Ask("Wo lebt {X} mittlerweile?", ("new_city",), "in {new_city}", "current"),
             Ask("Warum hat es {X} nach {new_city} verschlagen?", ("reason",), "{reason}")],
    "sibling": [Ask("Welchen Beruf hat {Xs} {rel} {sib}?", ("sib_job",), "{sib_job}"),
                Ask("Wo ist {Xs} {rel} {sib} zu Hause?", ("sib_city",), "in {sib_city}")],
    "wedding": [Ask("Wo wurde die Hochzeit von {Xs} {rel} {sib} gefeiert?", ("venue",),
                    "{venue}"),
                Ask("Wen hat {Xs} {rel} {sib} geheiratet?", ("spouse",), "{spouse}")],
    "birth": [Ask("Wie heißt {Xs} {new_niece}?", ("baby",), "{baby}"),
              Ask("Wie schwer war {Xs} {niece} {baby} bei der Geburt?", ("weight",),
                  "{weight}")],
    "illness": [Ask("Weswegen lag {Xs} {relative} im Krankenhaus?", ("condition",),
                    "{condition}")],
    "pet": [Ask("Welche Rasse hat {Xs} {species}?", ("breed",), "{a_breed}"),
            Ask("Was für ein Haustier hat sich {X} angeschafft?", ("breed",),
                "{a_breed_acc} namens {name}", "only")],
    "instrument": [Ask("Welches Instrument lernt {X} spielen?", ("instrument",),
                       "{instrument}")],
    "sport": [Ask("Auf welchen Wettkampf bereitet sich {X} vor?", ("goal",), "auf {goal}"),
              Ask("Welche Sportart hat {X} für sich entdeckt?", ("sport",), "{sport}")],
    "sport_drop": [Ask("Warum hat {X} mit dem {sport} Schluss gemacht?", ("reason",),
                       "{drop_reason}"),
                   Ask("Treibt {X} noch {sport}?", ("drop",), "Nein, {er} hat aufgehört.")],
    "craft": [Ask("Was hat {X} in {seinem} Kurs selbst hergestellt?", ("item",),
                  "{item_short}"),
              Ask("Welchen kreativen Kurs besucht {X}?", ("craft",), "{craft_class} ({craft})")],
    "trip": [Ask("Mit wem war {X} {in_dest} unterwegs?", ("companion",), "{companion_ans}"),
             Ask("Was war für {X} das Schönste am Urlaub {in_dest}?", ("highlight",),
                 "{highlight}")],
    "car": [Ask("Welche Farbe hat {Xs} Auto?", ("colour",), "{colour}", "current"),
            Ask("Welches Automodell fährt {X}?", ("model",), "einen {model}", "current")],
    "car_replace": [Ask("Was fährt {X} inzwischen?", ("new_model",),
                        "einen {new_colour_acc} {new_model}"),
                    Ask("Welche Farbe hat {Xs} neuestes Auto?", ("new_colour",),
                        "{new_colour}")],
    "bike": [Ask("Was für ein Rad hat sich {X} zugelegt?", ("bike",), "ein {bike}"),
             Ask("Von welcher Marke ist {Xs} Fahrrad?", ("brand",), "{brand}")],
    "course": [Ask("Was lernt {X} in {seinem} Abendkurs?", ("subject",), "{subject}")],
    "book": [Ask("Welchen Roman hat {X} empfohlen?", ("title",), "{title}"),
             Ask("Wer hat das Buch geschrieben, von dem {X} so geschwärmt hat?", ("author",),
                 "{author}")],
    "series": [Ask("Von welcher Serie war {X} so gefesselt?", ("series",), "{series}")],
    "concert": [Ask("Welche Band hat {X} live erlebt?", ("band",), "{band}"),
                Ask("Wo hat {X} {band} gesehen?", ("venue",), "{venue}")],
    "volunteer": [Ask("Wo hilft {X} unentgeltlich mit?", ("org",), "{org}"),
                  Ask("Welche Aufgaben übernimmt {X} im Ehrenamt?", ("task",), "{task}")],
    "diet": [Ask("Wie hat {X} {seine} Ernährung verändert?", ("diet",),
                 "{er} isst jetzt {diet}")],
    "project": [Ask("Welches Projekt verantwortet {X} gerade im Job?", ("project",),
                    "{project}")],
    "injury": [Ask("Wie hat sich {X} verletzt?", ("cause",), "{er} ist {cause}"),
               Ask("Welche Verletzung hatte {X}?", ("injury",), "{injury}")],
    "single": [Ask("Hat {X} einen Partner oder eine Partnerin?", ("single",),
                   "Nein, {er} ist Single.", "current")],
    "partnered": [Ask("Wie lange sind {X} und {partner} schon ein Paar?", ("years",),
                      "{years} Jahre")],
    "partner_new": [Ask("Wo ist {X} {partner} zum ersten Mal begegnet?", ("where_met",),
                        "{where_met}")],
    "engaged": [Ask("Wie hat {partner} {X} den Antrag gemacht?", ("proposal",),
                    "{proposal}")],
}

EVENTS = {
    "pet": ("dem Einzug von {Xs} {species} {name}", "hat {X} {name} zu sich geholt"),
    "move": ("{Xs} Umzug nach {new_city}", "ist {X} nach {new_city} umgezogen"),
    "job_change": ("{Xs} Wechsel {new_zu}", "hat {X} {new_short} angefangen"),
    "trip": ("{Xs} Urlaub {in_dest}", "ist {X} {from_dest} zurückgekehrt"),
    "wedding": ("der Hochzeit von {Xs} {rel}", "hat {Xs} {rel} {sib} geheiratet"),
    "birth": ("der Geburt von {Xs} {niece}", "kam {Xs} {niece} {baby} zur Welt"),
    "illness": ("dem Krankenhausaufenthalt von {Xs} {relative}",
                "musste {Xs} {relative} ins Krankenhaus"),
    "instrument": ("{Xs} erster {lesson}", "hat {X} angefangen, {instrument} zu lernen"),
    "sport": ("dem Beginn von {Xs} {training}", "hat {X} mit dem {sport} angefangen"),
    "car": ("dem Kauf von {Xs} {model}", "hat {X} den {model} gekauft"),
    "car_replace": ("dem Kauf von {Xs} {new_model}", "hat {X} den {new_model} bekommen"),
    "concert": ("{Xs} Konzertbesuch bei {band}", "hat {X} {band} live gesehen"),
    "injury": ("{Xs} {injury_noun}", "hat sich {X} {injury_acc} {injured_pp}"),
    "engaged": ("{Xs} Verlobung", "haben sich {X} und {partner} verlobt"),
    "partner_new": ("dem Kennenlernen von {X} und {partner}", "hat {X} {partner} kennengelernt"),
    "course": ("dem Start von {Xs} {course_name}", "hat {X} mit dem {course_name} angefangen"),
    "diet": ("{Xs} Ernährungsumstellung", "hat {X} angefangen, {diet} zu essen"),
    "bike": ("dem Kauf von {Xs} {bike}", "hat {X} sich das {bike} gekauft"),
}

TEMPORAL = {
    "*": [Ask("Wann {event_clause}?", ("when",), "{when_answer}")],
    "birth": [Ask("Wann wurde {Xs} {niece} {baby} geboren?", ("when",), "{when_answer}")],
    "trip": [Ask("Wann ist {X} aus dem Urlaub {in_dest} heimgekehrt?", ("when",),
                 "{when_answer}")],
}

HOW_LONG = [
    Ask("Wie lange nach {a_event} {b_clause}?", ("a:when", "b:when"), "{elapsed}"),
    Ask("Wie viel Zeit lag zwischen {a_event} und {b_event}?", ("a:when", "b:when"),
        "{elapsed}"),
]

OPEN_DOMAIN = {
    "job": [Ask("{infer_q}", ("role",), "{infer_a}")],
    "pet": [Ask("{infer_q}", ("breed",), "{infer_a}", "only")],
    "instrument": [Ask("{infer_q}", ("instrument",), "{infer_a}")],
    "sport": [Ask("{infer_q}", ("sport",), "{infer_a}")],
    "course": [Ask("{infer_q}", ("subject",), "{infer_a}")],
    "volunteer": [Ask("{infer_q}", ("org",), "{infer_a}")],
    "diet": [Ask("{infer_q}", ("diet",), "{infer_a}")],
    "craft": [Ask("{infer_q}", ("craft",), "{infer_a}")],
    "trip": [Ask("Verreist {X} gern?", ("dest",), "Ja: {er} war {in_dest} im Urlaub.")],
    "car": [Ask("Könnte {X} eine Freundin zum Flughafen bringen?", ("model",),
                "Wahrscheinlich ja: {er} hat einen {model}.", "current")],
    "bike": [Ask("Ist {X} vermutlich oft mit dem Rad unterwegs?", ("bike",),
                 "Wahrscheinlich: {er} hat sich ein {bike} gekauft.")],
    "book": [Ask("Würde sich {X} über einen Buchgutschein freuen?", ("title",),
                 "Wahrscheinlich ja: {er} hat von „{title}“ geschwärmt.")],
    "concert": [Ask("Mag {X} Livemusik?", ("band",), "Ja: {er} war bei {band} und begeistert.")],
    "engaged": [Ask("Plant {X} vermutlich bald eine Hochzeit?", ("proposal",),
                    "Wahrscheinlich: {er} hat sich mit {partner} verlobt.")],
    "injury": [Ask("Hätte {X} kurz nach dem Unfall Basketball spielen können?", ("injury",),
                   "Eher nicht: {er} hatte {injury}.")],
}

ADVERSARIAL = {
    "job": [Ask("Wie lange arbeitet {Y} schon {short}?", ("employer",),
                "Das hat {Y} nie gesagt; {X} arbeitet {short}.")],
    "job_change": [Ask("Wann ist {Y} {new_zu} gewechselt?", ("new_employer",),
                       "Gar nicht; {X} hat {new_short} angefangen.")],
    "home": [Ask("Seit wann wohnt {Y} in {city}?", ("city",),
                 "Das hat {Y} nie gesagt; {X} wohnt in {city}.")],
    "move": [Ask("Warum ist {Y} nach {new_city} gezogen?", ("new_city",),
                 "{Y} ist nicht dorthin gezogen; {X} ist nach {new_city} umgezogen.")],
    "pet": [Ask("Welche Rasse hat {Ys} {species}?", ("breed",),
                "{Y} hat nie von einem Haustier dieser Art erzählt; {X} hat {a_breed_acc} "
                "namens {name}.")],
    "instrument": [Ask("Welches Instrument lernt {Y}?", ("instrument",),
                       "{Y} hat keinen Unterricht erwähnt; {X} lernt {instrument}.")],
    "sport": [Ask("Für welchen Wettkampf trainiert {Y}?", ("goal",),
                  "{Y} hat kein Training erwähnt; {X} trainiert für {goal}.")],
    "craft": [Ask("Was hat {Y} im Kurs gemacht?", ("item",),
                  "{Y} hat keinen Kurs erwähnt; {X} hat {item_short} gemacht.")],
    "trip": [Ask("Mit wem war {Y} {in_dest}?", ("companion",),
                 "{Y} war nicht {in_dest}; {X} war dort, mit {companion}.")],
    "car": [Ask("Welche Farbe hat {Ys} Auto?", ("colour",),
                "{Y} hat nie ein Auto erwähnt; das von {X} ist {colour}.")],
    "bike": [Ask("Was für ein Fahrrad hat sich {Y} gekauft?", ("bike",),
                 "{Y} hat keins erwähnt; {X} hat sich ein {bike} gekauft.")],
    "course": [Ask("Für welchen Abendkurs hat sich {Y} angemeldet?", ("subject",),
                   "{Y} hat keinen erwähnt; {X} lernt {subject}.")],
    "book": [Ask("Was fand {Y} an „{title}“ so gut?", ("title",),
                 "{Y} hat nie über das Buch gesprochen; {X} hat es empfohlen.")],
    "series": [Ask("Warum hat {Y} {series} so gefallen?", ("series",),
                   "{Y} hat die Serie nie erwähnt; {X} hat sie geschaut.")],
    "concert": [Ask("Wann hat {Y} {band} live gesehen?", ("band",),
                    "Gar nicht; {X} war beim Konzert von {band}.")],
    "volunteer": [Ask("Wo engagiert sich {Y} am Wochenende?", ("org",),
                      "{Y} hat kein Ehrenamt erwähnt; {X} hilft {org}.")],
    "diet": [Ask("Warum isst {Y} jetzt {diet}?", ("diet",),
                 "Das tut {Y} nicht; {X} isst jetzt {diet}.")],
    "project": [Ask("Welches Projekt leitet {Y} auf der Arbeit?", ("project",),
                    "{Y} hat keins erwähnt; {X} ist für {project} zuständig.")],
    "injury": [Ask("Wie kam es zu {Ys} {injury_noun}?", ("injury",),
                   "{Y} war nicht verletzt; {X} hatte {injury}.")],
    "illness": [Ask("Warum war {Ys} {relative} im Krankenhaus?", ("condition",),
                    "Davon hat {Y} nichts erzählt; bei {X} ging es um {condition}.")],
    "wedding": [Ask("Wo hat {Ys} {rel} geheiratet?", ("venue",),
                    "{Y} hat keine Hochzeit erwähnt; {Xs} {rel} {sib} hat {venue} geheiratet.")],
    "birth": [Ask("Wie heißt {Ys} {new_niece}?", ("baby",),
                  "{Y} hat kein Baby erwähnt; {Xs} {niece} heißt {baby}.")],
    "partner_new": [Ask("Wo hat {Y} {partner} kennengelernt?", ("where_met",),
                        "{Y} hat {partner} nie erwähnt; {X} hat {partner} {where_met} "
                        "kennengelernt.")],
    "engaged": [Ask("Wie wurde {Y} der Heiratsantrag gemacht?", ("proposal",),
                    "{Y} hat keinen Antrag erwähnt; {partner} hat {X} einen gemacht.")],
}

MULTI_HOP = {
    "job_before": [Ask("Wo hat {X} vor dem Wechsel {b[new_zu]} gearbeitet?",
                       ("a:employer", "b:new_employer"), "{a[employer]}")],
    "city_before": [Ask("In welcher Stadt hat {X} gewohnt, bevor {er} nach {b[new_city]} zog?",
                        ("a:city", "b:new_city"), "in {a[city]}")],
    "car_before": [Ask("Welches Auto hatte {X} vor dem {b[new_model]}?",
                       ("a:model", "b:new_model"), "einen {a[colour_acc]} {a[model]}")],
    "sport_dropped": [Ask("Auf welches Ziel hatte {X} hintrainiert, bevor {er} mit dem "
                          "{a[sport]} aufhörte?", ("a:goal", "b:drop"), "{a[goal]}")],
    "single_before": [Ask("War {X} vergeben, bevor {er} {b[partner]} kennenlernte?",
                          ("a:single", "b:partner"), "Nein, {er} war Single.")],
    "sibling_wedding": [
        Ask("Welchen Beruf hat {Xs} {b[married_rel]}?", ("a:sib_job", "b:sib"),
            "{a[sib_job]}"),
        Ask("In welcher Stadt wohnt {Xs} {b[married_rel]}?", ("a:sib_city", "b:sib"),
            "{a[sib_city]}")],
    "sibling_birth": [
        Ask("Welchen Beruf hat {Xs} {b[rel]}, {b[who]} gerade {b[parent_word]} geworden ist?",
            ("a:sib_job", "b:sib"), "{a[sib_job]}")],
    "sibling_trip": [
        Ask("Was macht die Person beruflich, mit der {X} {b[in_dest]} war?",
            ("a:sib_job", "b:companion"), "{a[sib_job]} ({a[sib]})")],
    "partner_trip": [
        Ask("Wohin ist {X} mit der Person verreist, die {er} {a[where_met]} kennengelernt hat?",
            ("a:where_met", "b:companion"), "{b[to_dest]}")],
    "partner_engaged": [
        Ask("Wo hat {X} die Person kennengelernt, mit der {er} jetzt verlobt ist?",
            ("a:where_met", "b:when"), "{a[where_met]}")],
    "two_pets": [Ask("Welche Tiere leben bei {X}?", ("a:breed", "b:breed"),
                     "{a[a_breed]} ({a[name]}) und {b[a_breed]} ({b[name]})")],
    "hobbies": [Ask("Nenne zwei neue Hobbys, mit denen {X} im Laufe des Jahres angefangen hat.",
                    ("a:hobby", "b:hobby"), "{a[hobby]} und {b[hobby]}")],
    "pet_home": [Ask("In welcher Stadt hat {X} gewohnt, als {b[name]} bei {ihm} einzog?",
                     ("a:city", "b:when"), "in {a[city]}")],
    "pet_move": [Ask("In welcher Stadt hat {X} gewohnt, als {b[name]} bei {ihm} einzog?",
                     ("a:new_city", "b:when"), "in {a[new_city]}")],
    "job_then_move": [Ask("In welche Stadt ist {X} gezogen, nachdem {er} {a[new_short]} "
                          "angefangen hatte?", ("a:new_employer", "b:new_city"),
                          "nach {b[new_city]}")],
    "both_pet": [Ask("Welche Haustiere haben {X} und {Y}?", ("a:breed", "b:breed"),
                     "{X}: {a[a_breed_acc]} ({a[name]}); {Y}: {b[a_breed_acc]} ({b[name]})")],
    "both_trip": [Ask("Wohin sind {X} und {Y} jeweils in den Urlaub gefahren?",
                      ("a:dest", "b:dest"), "{X}: {a[to_dest]}; {Y}: {b[to_dest]}")],
    "both_instrument": [Ask("Welche Instrumente lernen {X} und {Y}?",
                            ("a:instrument", "b:instrument"),
                            "{X}: {a[instrument]}; {Y}: {b[instrument]}")],
    "both_sport": [Ask("Welche Sportarten haben {X} und {Y} angefangen?",
                       ("a:sport", "b:sport"), "{X}: {a[sport]}; {Y}: {b[sport]}")],
}

GERMAN = Language(
    code="de",
    timezone="Europe/Berlin",
    names=NAMES,
    values=VALUES,
    pronouns=PRONOUNS,
    possessive=_possessive,
    time=TIME,
    reactions=REACTIONS,
    scripts=SCRIPTS,
    callbacks=CALLBACKS,
    topics=TOPICS,
    openers=OPENERS,
    closers=CLOSERS,
    filler=FILLER,
    seasons=SEASONS,
    hints=HINTS,
    single_hop=SINGLE_HOP,
    temporal=TEMPORAL,
    open_domain=OPEN_DOMAIN,
    adversarial=ADVERSARIAL,
    multi_hop=MULTI_HOP,
    how_long=HOW_LONG,
    events=EVENTS,
)
