"""Two reference conditions; the others follow the same pattern (see ``schema.Condition``)."""

from __future__ import annotations

from agentrl.envs.consult.conditions.schema import Condition

CONDITIONS = (
    Condition(
        key="community_acquired_pneumonia",
        name="community-acquired pneumonia",
        synonyms=("pneumonia", "CAP", "bacterial pneumonia", "lobar pneumonia", "lower respiratory tract infection"),
        specialty="respiratory medicine",
        complaint="a bad cough and a fever",
        hpi={
            "onset": ("It started about three days ago.", "It came on four days ago and has got steadily worse."),
            "character": ("The cough is deep and it brings up thick stuff.",),
            "location": ("The pain is on the right side of my chest, low down.",),
            "aggravating": ("Taking a deep breath in makes the pain worse.",),
            "relieving": ("Paracetamol takes the edge off for a few hours.",),
            "timing": ("It's there all the time and it's getting worse each day.",),
        },
        symptoms={
            "fever": ("I've had a fever, up to 39, with shivers.", "I've been burning up and shaking with chills."),
            "cough": ("I've been coughing non-stop.",),
            "sputum": ("I'm coughing up thick yellow-green phlegm.", "The phlegm is green and thick."),
            "shortness_of_breath": ("I get out of breath walking up the stairs.",),
        },
        optional_symptoms={
            "chest_pain": ("I get a sharp pain in my chest when I cough.",),
            "fatigue": ("I'm absolutely exhausted.",),
            "appetite": ("I've gone off my food.",),
            "muscle_aches": ("My whole body aches.",),
        },
        history={
            "sick_contacts": ("My grandson had a chesty cold last week.",),
        },
        tests={
            "vital_signs": "Temperature 38.9 C, heart rate 108/min, blood pressure 118/72 mmHg, respiratory rate 24/min, SpO2 93% on room air.",
            "respiratory_exam": "Reduced expansion on the right; bronchial breathing and coarse crackles at the right base.",
            "chest_xray": "Right lower lobe consolidation with air bronchograms; no effusion.",
            "cbc": "White cells 15.8 x10^9/L with neutrophilia; haemoglobin 134 g/L; platelets 310 x10^9/L.",
            "crp": "CRP 186 mg/L.",
        },
        key_questions=("onset", "fever", "sputum", "shortness_of_breath"),
        red_flags=("confusion", "hemoptysis"),
        key_tests=("vital_signs", "respiratory_exam", "chest_xray"),
        plan=(
            ("antibiotic", "amoxicillin", "doxycycline", "clarithromycin"),
            ("follow-up", "follow up", "review", "return if", "come back"),
        ),
        harmful=(("codeine cough", "cough suppressant"),),
        differential=("acute bronchitis", "pulmonary embolism", "heart failure", "lung cancer"),
        ages=(25, 85),
    ),
    Condition(
        key="acute_appendicitis",
        name="acute appendicitis",
        synonyms=("appendicitis",),
        specialty="general surgery",
        complaint="a pain in my tummy that keeps getting worse",
        hpi={
            "onset": ("It began yesterday evening.", "It started about eighteen hours ago."),
            "character": ("It's a constant, sharp pain.",),
            "location": ("It started around my belly button and has moved down to the lower right side.",),
            "severity": ("I'd say it's eight out of ten.", "It's about seven out of ten and rising."),
            "aggravating": ("Moving, coughing and going over bumps in the car make it much worse.",),
            "relieving": ("Lying still with my knees up helps a little.",),
            "prior_episodes": ("I've never had anything like this before.",),
        },
        symptoms={
            "abdominal_pain": ("My belly really hurts.",),
            "appetite": ("I haven't wanted to eat anything since it started.",),
            "nausea": ("I feel sick.",),
        },
        optional_symptoms={
            "fever": ("I've felt a bit hot and sweaty.",),
            "vomiting": ("I've been sick once.",),
        },
        tests={
            "vital_signs": "Temperature 38.1 C, heart rate 104/min, blood pressure 124/76 mmHg, respiratory rate 18/min, SpO2 98%.",
            "abdominal_exam": "Tender in the right iliac fossa with guarding; rebound tenderness; Rovsing's sign positive.",
            "cbc": "White cells 14.6 x10^9/L with neutrophilia.",
            "crp": "CRP 74 mg/L.",
            "abdominal_ultrasound": "Non-compressible, thickened appendix 9 mm in diameter with surrounding fluid.",
            "ct_abdomen": "Dilated, inflamed appendix with periappendiceal fat stranding; no perforation.",
        },
        key_questions=("onset", "location", "appetite", "vomiting"),
        red_flags=("fever",),
        key_tests=("abdominal_exam", "cbc", "abdominal_ultrasound"),
        plan=(
            ("surgeon", "surgical", "surgery", "appendicectomy", "appendectomy"),
            ("nil by mouth", "nothing to eat", "fasting", "not eat"),
        ),
        harmful=(("laxative", "enema"), ("send you home", "go home and rest")),
        differential=("mesenteric adenitis", "ectopic pregnancy", "ovarian torsion", "renal colic", "gastroenteritis"),
        ages=(16, 45),
    ),
)
